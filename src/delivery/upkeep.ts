/**
 * Background work of the delivery worker besides delivering: retention sweeps and replays (docs/decisions.md).
 * Both change many rows, so both go a chunk at a time, each chunk one transaction. What publishes
 * wait for is the write lock a chunk holds, and the CPU it takes from them: so a chunk is sized to hold the lock
 * about CHUNK_MS (the size follows the time the last chunk took), and the work rests a multiple of that after
 * each. A replay rests three times as long (a quarter of the lock at most: it is work someone asked for and
 * waits on); a sweep six times (a seventh), since deleting a message with its deliveries and attempts costs
 * several times a publish, and nobody waits for it (docs/performance.md has the figures).
 *
 * - Retention: every min(retention / 2, 1 minute), the final messages older than the retention go, oldest first
 *   (DeliveryStore.deleteExpired). Each sweep that deleted something is logged once, with its count.
 * - Replays: looked for four times a second; each chunk makes the next deliveries of the oldest replay due now,
 *   and the loop is woken to send them.
 * Of instances sharing a PostgreSQL database, only the one leading the housekeeping does either (`lead`).
 */
import type { DeliveryStore } from "../store/deliveries.ts";
import type { LogEvents } from "../lib/log-events.ts";

/** How long one chunk should hold the write lock. */
const CHUNK_MS = 2;
const MIN_CHUNK = 8;
const MAX_CHUNK = 2_000;
const MAX_SWEEP_EVERY_MS = 60_000;
/** How soon a replay accepted by the API is taken up. */
const REPLAY_POLL_MS = 250;
/** Rest after a chunk, as a multiple of the chunk's own time: replays, retention sweeps. */
const REPLAY_REST = 3;
const SWEEP_REST = 6;
const MIN_REST_MS = 2;
/** A chunk that took long because the process was paused or starved must not park the work for long after. */
const MAX_REST_MS = 250;

export type UpkeepOptions = {
  store: DeliveryStore;
  now: () => number;
  /** 0: keep everything. */
  retentionMs: number;
  /** New due deliveries (a replay chunk): the loop should claim. */
  wake: () => void;
  events: Pick<LogEvents, "retentionSwept">;
  /** Whether this worker does the upkeep now: instances sharing a PostgreSQL database take turns (loop.ts). */
  lead?: () => Promise<boolean>;
  /** A chunk failed: the worker pauses on a storage error, ends on any other. */
  fail: (error: unknown) => void;
  /** True while the database cannot be written: no sweep or replay starts; the next tick after it tries again. */
  paused?: () => boolean;
};

/** A chunk of `size` rows; true while more remains. */
type Chunk = (size: number) => Promise<boolean>;

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

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    clearInterval(this.replayTimer);
    await Promise.all([this.sweeping, this.replaying]);
  }

  private async leading(): Promise<boolean> {
    return this.o.lead ? this.o.lead() : true;
  }

  /** Takes up waiting replays unless it is at them already. */
  private replayIfWaiting(): void {
    if (this.stopped || this.replaying || this.o.paused?.()) return;
    this.replaying = this.leading().then((lead) => (lead ? this.paced(REPLAY_REST, async (size) => {
      const { replayed, more } = await this.o.store.replayChunk(size, this.o.now());
      if (replayed > 0) this.o.wake();
      return more;
    }) : undefined)).catch(this.o.fail).finally(() => (this.replaying = null));
  }

  private sweep(): void {
    if (this.stopped || this.sweeping || this.o.paused?.()) return;
    this.sweeping = this.sweepOnce().catch(this.o.fail).finally(() => (this.sweeping = null));
  }

  private async sweepOnce(): Promise<void> {
    if (!(await this.leading())) return;
    const before = this.o.now() - this.o.retentionMs;
    let deleted = 0;
    await this.paced(SWEEP_REST, async (size) => {
      const n = await this.o.store.deleteExpired(before, size);
      deleted += n;
      return n === size;
    });
    this.o.events.retentionSwept({ messages: deleted });
  }

  /** Runs chunks until one reports no more, each sized to hold the write lock about CHUNK_MS, resting `rest` times as long. */
  private async paced(rest: number, chunk: Chunk): Promise<void> {
    let size = MIN_CHUNK;
    while (!this.stopped && !this.o.paused?.()) {
      const started = performance.now();
      if (!(await chunk(size))) return;
      const took = Math.max(0.1, performance.now() - started);
      size = Math.round(Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, (size * CHUNK_MS) / took)));
      await Bun.sleep(Math.min(MAX_REST_MS, Math.max(MIN_REST_MS, took * rest)));
    }
  }
}
