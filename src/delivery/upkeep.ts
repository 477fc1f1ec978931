/**
 * Background work of the delivery worker besides delivering: retention sweeps (PRODUCT §9) and replays
 * (PRODUCT §10). Both change many rows, so both go a chunk at a time, each chunk one short transaction, and rest
 * between chunks for three times as long as the chunk took: they take at most a quarter of the worker's time and
 * of the write lock, and publishes and deliveries go on meanwhile.
 *
 * - Retention: every min(retention / 2, 1 minute), the final messages older than the retention go, oldest first
 *   (DeliveryStore.deleteExpired). Each sweep that deleted something is logged once, with its count.
 * - Replays: looked for four times a second; each chunk makes up to REPLAY_CHUNK deliveries due now, and the
 *   loop is woken to send them.
 */
import type { DeliveryStore } from "../store/deliveries.ts";
import type { LogEvents } from "../lib/log-events.ts";

export const RETENTION_BATCH = 500;
export const REPLAY_CHUNK = 2_000;
const MAX_SWEEP_EVERY_MS = 60_000;
/** How soon a replay accepted by the API is taken up. */
const REPLAY_POLL_MS = 250;
/** Rest after a chunk, as a multiple of the chunk's own time. */
const REST_FACTOR = 3;
const MIN_REST_MS = 2;

export type UpkeepOptions = {
  store: DeliveryStore;
  now: () => number;
  /** 0: keep everything. */
  retentionMs: number;
  /** New due deliveries (a replay chunk): the loop should claim. */
  wake: () => void;
  events: Pick<LogEvents, "retentionSwept">;
  /** A chunk failed: the worker pauses on a storage error, ends on any other. */
  fail: (error: unknown) => void;
  /** True while the database cannot be written: no sweep or replay starts; the next tick after it tries again. */
  paused?: () => boolean;
};

export class Upkeep {
  private stopped = false;
  private sweepTimer: Timer | undefined;
  private replayTimer: Timer | undefined;
  private sweeping: Promise<void> | null = null;
  private replaying: Promise<void> | null = null;

  constructor(private readonly o: UpkeepOptions) {}

  start(): void {
    this.replayTimer = setInterval(() => this.replayIfWaiting(), REPLAY_POLL_MS);
    this.replayIfWaiting();
    if (this.o.retentionMs <= 0) return;
    const every = Math.max(1, Math.min(Math.floor(this.o.retentionMs / 2), MAX_SWEEP_EVERY_MS));
    this.sweepTimer = setInterval(() => this.sweep(), every);
    this.sweep();
  }

  /** Takes up waiting replays unless it is at them already. */
  private replayIfWaiting(): void {
    if (this.stopped || this.replaying || this.o.paused?.()) return;
    this.replaying = this.replay().catch(this.o.fail).finally(() => (this.replaying = null));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    clearInterval(this.replayTimer);
    await Promise.all([this.sweeping, this.replaying]);
  }

  private sweep(): void {
    if (this.stopped || this.sweeping || this.o.paused?.()) return;
    this.sweeping = this.sweepOnce().catch(this.o.fail).finally(() => (this.sweeping = null));
  }

  private async sweepOnce(): Promise<void> {
    const before = this.o.now() - this.o.retentionMs;
    let deleted = 0;
    await this.paced(async () => {
      const n = await this.o.store.deleteExpired(before, RETENTION_BATCH);
      deleted += n;
      return n === RETENTION_BATCH;
    });
    this.o.events.retentionSwept({ messages: deleted });
  }

  private async replay(): Promise<void> {
    await this.paced(async () => {
      const { replayed, more } = await this.o.store.replayChunk(REPLAY_CHUNK, this.o.now());
      if (replayed > 0) this.o.wake();
      return more;
    });
  }

  /** Runs `chunk` until it reports no more, resting between chunks. */
  private async paced(chunk: () => Promise<boolean>): Promise<void> {
    while (!this.stopped && !this.o.paused?.()) {
      const started = performance.now();
      if (!(await chunk())) return;
      await Bun.sleep(Math.max(MIN_REST_MS, (performance.now() - started) * REST_FACTOR));
    }
  }
}
