// The drain loop of the delivery worker.
//
// A step writes the results gathered so far and claims due deliveries, in one transaction (completeAndClaim).
// Claimed rows are held in memory until settled, at most twice the global cap in all (HELD_PER_CAP), and each
// listener's within its hold (store/deliveries.ts holdOf: four times its concurrency, one for a FIFO listener,
// two seconds of starts for a rate-limited one). When a held row starts is lanes.ts's call: its listener's
// concurrency and pace, and the global cap on requests in flight. A row waiting for its listener is sent the
// moment it may, without waiting for a step, which waits for the write lock the publishes also take. A ready row
// is sent within READY_PER_CAP delivery timeouts of its claim (each round of requests before it ends within
// one), so a lease covers that, its own timeout and a margin; one kept back longer (by the global cap) goes back
// to the database rather than start past its lease. Rows of down or paused listeners come back flagged and are
// held at once.
//
// Steps start on a nudge (a publish), when results arrive (slots freed), at the earliest next_attempt_at the
// claim reported, and on a short poll as the safety net (a nudge is lost across a restart; a retry may come
// due while nothing else happens). The poll also runs the housekeeping: expired leases back to pending (a
// crashed worker's rows), held deliveries past the allowed wait to missed, liveness probes.
//
// A step costs about the same for one row as for fifty (the transaction, its commit, the reads that choose),
// so work that can wait is batched: a result whose slot was refilled from the ready list, and a nudge while
// requests are in flight, ask for a step within BATCH_MS of the last one (`soon`). A slot left empty, an idle
// worker's nudge and a due time step at once (`wake`), so a quiet service sends without delay and a ready list
// that runs dry is topped up at once (docs/performance.md has the figures behind both).
//
// While the database cannot be written (`paused`, store/outage.ts) the loop claims nothing and skips housekeeping;
// claimed rows are still sent, and their results wait in memory (a failed write puts them back) for `resume`,
// which settles them before housekeeping could rescue their leases (a settle is fenced by token, not by expiry).
//
// Stop: no new claims and no new sends; sends in flight get until the drain deadline; their results are
// written; the rest (unfinished sends, ready rows) are given back (release), so the next start sends them at
// once rather than after lease expiry.
import { RATE_HOLD_MS, type ClaimedDelivery, type Completion, type DeliveryStore, type MissedDelivery } from "../store/deliveries.ts";
import { Lanes } from "./lanes.ts";
import { attempt, type AttemptDeps, type AttemptResult } from "./send.ts";
import { scheduleTotalMs } from "./retry.ts";
import type { Prober } from "./liveness.ts";

/** Covers the wait for the write lock (busy_timeout) and event-loop lag between a send's end and its commit. */
export const LEASE_MARGIN_MS = 5_000;
export const POLL_MS = 250;
const MAX_BATCH = 256;
/** The longest a result or a new message waits for a step while every slot has a row to send. */
export const BATCH_MS = 5;
/**
 * How many times its cap a listener may hold in its ready list, besides the requests in flight. The list must
 * outlast a step that waits for the write lock, a checkpoint or a collection (docs/performance.md, Ready lists).
 */
const READY_PER_CAP = 3;
/** Rows held in all, as a multiple of the global cap on requests: the rest of them wait for their listeners. */
const HELD_PER_CAP = 2;

/**
 * What the worker counts and logs (worker.ts): each attempt as it ends, deliveries once they are missed, and a
 * listener its receiver paused with a 410 Gone.
 */
export type LoopObserver = {
  attempted(delivery: ClaimedDelivery, result: AttemptResult, endedAt: number): void;
  missed(deliveries: MissedDelivery[], reason: string): void;
  paused(delivery: MissedDelivery, status: number): void;
};

export const MISSED_RETRIES = "retry schedule spent";
export const MISSED_HELD = "listener down or paused for longer than the retry schedule";

export type LoopOptions = {
  store: DeliveryStore;
  owner: string;
  now: () => number;
  deliveryTimeoutMs: number;
  retryScheduleMs: number[];
  globalCap: number;
  listenerCap: number;
  attempt: AttemptDeps;
  prober: Prober;
  /**
   * Whether this worker runs the housekeeping now. Instances sharing a PostgreSQL database take turns (an advisory
   * lock, store/postgres/leader.ts); absent, it always does.
   */
  lead?: () => Promise<boolean>;
  /** A failed write: the worker pauses on a storage error, and on any other exits (the supervisor restarts it). */
  fail: (error: unknown) => void;
  /** True while the database cannot be written: the loop claims nothing and writes nothing (above). */
  paused?: () => boolean;
  observer?: LoopObserver;
  pollMs?: number;
  batchMs?: number;
};

export class DeliveryLoop {
  // Keyed by the claim, not the row id: a deleted delivery's id can be reused while its send is still in flight.
  private readonly inFlight = new Set<ClaimedDelivery>();
  /** Rows held per listener, and when each may start (lanes.ts). */
  private readonly lanes: Lanes;
  /** Rows that could not start within their lease, to give back at the next step. */
  private giveBack: ClaimedDelivery[] = [];
  private results: Completion[] = [];
  /**
   * Results that make their delivery missed, or pause its listener (410), with the claim they came from: reported
   * once the store settled them.
   */
  private readonly watched = new Map<Completion, ClaimedDelivery>();
  private stepQueued = false;
  /** The step `soon` scheduled, if any; `wake` runs it at once instead. */
  private soonTimer: Timer | undefined;
  private lastStepAt = -Infinity;
  private stepping = false;
  private again = false;
  private stopping = false;
  private closed = false;
  private poll: Timer | undefined;
  private due: { timer: Timer; at: number } | undefined;
  private drained: (() => void) | undefined;

  constructor(private readonly o: LoopOptions) {
    this.lanes = new Lanes({
      globalCap: o.globalCap, listenerCap: o.listenerCap, now: o.now,
      launch: (c, now) => this.launch(c, now),
      expired: (c) => this.giveBack.push(c),
      startedLater: () => this.soon(),
    });
  }

  start(): void {
    this.poll = setInterval(() => this.housekeep(), this.o.pollMs ?? POLL_MS);
    this.housekeep();
  }

  /**
   * Schedules one step: write the results gathered so far, then claim for the slots they freed. Coalesced: many
   * nudges and results in one tick make one step. Doing both in one step refills a freed slot without an extra
   * turn of the event loop; under load that idle gap is what separates the loop from a bare client.
   */
  wake(): void {
    if (this.soonTimer) {
      clearTimeout(this.soonTimer);
      this.soonTimer = undefined;
    }
    if (this.stepQueued) return;
    this.stepQueued = true;
    setImmediate(() => {
      this.stepQueued = false;
      this.step().catch(this.o.fail);
    });
  }

  /** A step within the batch time of the last one: for work that can wait while every slot has a row to send. */
  soon(): void {
    if (this.stepQueued || this.soonTimer) return;
    const wait = this.lastStepAt + (this.o.batchMs ?? BATCH_MS) - this.o.now();
    if (wait <= 0) return this.wake();
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      this.wake();
    }, wait);
  }

  /** The database can be written again: the results kept meanwhile are written now, before any housekeeping. */
  resume(): void {
    this.step().catch(this.o.fail);
  }

  /** New messages: an idle worker steps at once; a busy one takes them in its next batch. */
  nudge(): void {
    if (this.inFlight.size === 0) this.wake();
    else this.soon();
  }

  get active(): number {
    return this.inFlight.size;
  }

  async stop(drainMs: number): Promise<void> {
    this.stopping = true;
    this.lanes.halt();
    this.o.prober.stop();
    clearInterval(this.poll);
    clearTimeout(this.soonTimer);
    if (this.due) clearTimeout(this.due.timer);
    if (this.inFlight.size > 0) {
      const drained = new Promise<void>((resolve) => (this.drained = resolve));
      let timer: Timer | undefined;
      await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)))]);
      clearTimeout(timer);
    }
    // A store that cannot be written leaves these rows leased: the next start gives them back (releaseAll).
    await this.flush().catch(this.o.fail);
    this.closed = true;
    const abandoned = [...this.inFlight.values(), ...this.lanes.drain(), ...this.giveBack.splice(0)];
    if (abandoned.length > 0) await this.o.store.release(abandoned, this.o.now()).catch(this.o.fail);
  }

  private housekeep(): void {
    if (this.o.paused?.()) return;
    const now = this.o.now();
    const { store } = this.o;
    const leading = this.o.lead ? this.o.lead() : Promise.resolve(true);
    leading
      .then((lead): Promise<unknown> | undefined => lead ? Promise.all([
        store.rescueExpiredLeases(now),
        store.expireHeld(scheduleTotalMs(this.o.retryScheduleMs), now).then((missed) => {
          if (missed.length > 0) this.o.observer?.missed(missed, MISSED_HELD);
        }),
        this.o.prober.tick(),
      ]) : undefined)
      .then(() => this.wake(), this.o.fail);
  }

  private async step(): Promise<void> {
    if (this.stepping) {
      this.again = true;
      return;
    }
    this.stepping = true;
    try {
      do {
        this.again = false;
        await this.settleAndClaim();
      } while (this.again && !this.stopping);
    } finally {
      this.stepping = false;
    }
  }

  /** The results gathered so far and the claim for the slots they freed, in one transaction. */
  private async settleAndClaim(): Promise<void> {
    if (this.o.paused?.()) return;
    if (this.giveBack.length > 0) await this.o.store.release(this.giveBack.splice(0), this.o.now());
    const limit = Math.min(HELD_PER_CAP * this.o.globalCap - this.lanes.held, MAX_BATCH);
    if (limit <= 0 || this.stopping) return this.flush();
    const results = this.results;
    this.results = [];
    const now = this.o.now();
    this.lastStepAt = now;
    // A ready row waits for at most READY_PER_CAP rounds of its listener's requests, each ending within one
    // timeout, or for a start slot within twice RATE_HOLD_MS, and then takes one timeout itself.
    const leaseMs = Math.max(READY_PER_CAP * this.o.deliveryTimeoutMs, 2 * RATE_HOLD_MS) + this.o.deliveryTimeoutMs + LEASE_MARGIN_MS;
    const holdPerRequest = 1 + READY_PER_CAP;
    // With requests in flight another step follows their ends, and it looks for the next due time then.
    const request = {
      owner: this.o.owner, leaseMs, limit, perListener: this.o.listenerCap * holdPerRequest, holdPerRequest, busy: this.lanes.busy,
      wantsNextDue: this.inFlight.size === 0,
    };
    const { claimed, nextDueAt, settled } = await this.o.store.completeAndClaim(results, request, now).catch((error: unknown) => {
      // Kept for the next step (the database briefly cannot be written or reached); written twice, a result is
      // fenced out the second time.
      this.results = results.concat(this.results);
      throw error;
    });
    this.report(results, settled);
    // The latest a row may start and still end within its lease, with the margin for the write of its result.
    const latestStart = now + leaseMs - this.o.deliveryTimeoutMs - LEASE_MARGIN_MS;
    for (const c of claimed) if (!c.listener.held) this.lanes.take(c, latestStart);
    const held = claimed.filter((c) => c.listener.held);
    if (held.length > 0) await this.o.store.hold(held, now);
    // A full batch suggests more is due; freed slots and nudges start further rounds.
    if (claimed.length === limit) this.again = true;
    if (nextDueAt !== null) this.wakeAt(nextDueAt);
  }

  private wakeAt(at: number): void {
    if (this.stopping || (this.due && this.due.at <= at)) return;
    if (this.due) clearTimeout(this.due.timer);
    const timer = setTimeout(() => {
      this.due = undefined;
      this.wake();
    }, Math.max(0, at - this.o.now()));
    this.due = { timer, at };
  }

  /** Called by the lanes when a row may start (lanes.ts). */
  private launch(c: ClaimedDelivery, now: number): void {
    this.inFlight.add(c);
    attempt(c, this.o.attempt, now).then((result) => {
      if (this.closed) return; // released at stop: the row is pending again and this result is fenced out anyway
      this.inFlight.delete(c);
      const completion: Completion = { attempt: result.attempt, record: result.record, next: result.next, id: c.id, token: c.token,
        listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, fifo: c.listener.fifo };
      this.results.push(completion);
      if (result.next.state === "missed" || result.next.state === "gone") this.watched.set(completion, c);
      // A FIFO line's head due again later: the store's next due time leaves lines out, so the loop keeps it itself.
      if (c.listener.fifo && result.next.state === "pending") this.wakeAt(result.next.at);
      this.o.observer?.attempted(c, result, this.o.now());
      // A slot refilled from a ready list goes on sending: its result can wait for the next batch.
      const refilled = this.lanes.ended(c);
      if (refilled) this.soon();
      else this.wake();
      if (this.inFlight.size === 0) this.drained?.();
    }, this.o.fail);
  }

  private async flush(): Promise<void> {
    if (this.results.length === 0) return;
    const batch = this.results;
    this.results = [];
    const settled = await this.o.store.complete(batch, this.o.now()).catch((error: unknown) => {
      this.results = batch.concat(this.results);
      throw error;
    });
    this.report(batch, settled);
  }

  /** Results the store settled as missed or gone (a fenced-out result changed nothing, so it reports nothing). */
  private report(items: Completion[], settled: boolean[]): void {
    if (this.watched.size === 0) return;
    const missed: MissedDelivery[] = [];
    items.forEach((item, i) => {
      const c = this.watched.get(item);
      if (!c) return;
      this.watched.delete(item);
      if (!settled[i]) return;
      const d = { orgId: c.listener.orgId, listenerId: c.listener.id, queueId: c.message.queue.id, messageId: c.message.id };
      if (item.next.state === "gone") this.o.observer?.paused(d, item.record.statusCode ?? 410);
      else missed.push(d);
    });
    if (missed.length > 0) this.o.observer?.missed(missed, MISSED_RETRIES);
  }
}

