// When a claimed delivery may start: one lane per listener holding rows, the one place that decides it
// (docs/delivery.md, "Pace and order").
//
// A row starts when its listener has a request free (its concurrency, 1 for a FIFO listener, else the worker's
// default), the worker has one free in all (the global cap counts requests in flight only, so rows that must
// wait for a slow, rate-limited or FIFO listener never keep another listener's rows from starting), and its
// pace allows: not before the start slot its claim gave it, and never more starts in one second than the
// listener's rate limit (a window this worker keeps exactly; the slots spread starts across workers too).
// Lanes blocked only by the global cap are served in turn as requests end, so a busy listener cannot keep a
// freed slot to itself. A row whose lease would run out before its request could end is not started: it goes
// back to the database, to be claimed again.
import type { ClaimedDelivery } from "../store/deliveries.ts";

export type LaneOptions = {
  globalCap: number;
  listenerCap: number;
  now: () => number;
  /** Starts the request of `c`; `ended(c)` must follow when it ends. */
  launch: (c: ClaimedDelivery) => void;
  /** A row that can no longer start within its lease: the caller gives it back. */
  expired: (c: ClaimedDelivery) => void;
  /** A row started by a pace timer rather than by a claim or a request's end. */
  startedLater?: () => void;
  /** The timers that wait for a pace (tests pass their own, driven by a manual clock). */
  timers?: Timers;
};

export type Timers = { set(fn: () => void, ms: number): unknown; clear(handle: unknown): void };
const realTimers: Timers = { set: (fn, ms) => setTimeout(fn, ms), clear: (handle) => clearTimeout(handle as Timer) };

class Lane {
  readonly ready: ClaimedDelivery[] = [];
  sending = 0;
  held = 0;
  cap = 1;
  rate: number | null = null;
  timer: unknown;
  /** The start times of this worker's last `rate` starts, a ring: the next may start a second after the oldest. */
  private starts = new Float64Array(0);
  private count = 0;

  constructor(readonly seq: number) {}

  /** The listener's settings as its newest claimed row carries them: changes apply to rows not yet started. */
  configure(c: ClaimedDelivery, listenerCap: number): void {
    this.cap = c.listener.fifo ? 1 : (c.listener.concurrency ?? listenerCap);
    if (c.listener.rateLimit !== this.rate) {
      this.rate = c.listener.rateLimit;
      this.starts = new Float64Array(this.rate ?? 0);
      this.count = 0;
    }
  }

  /** Milliseconds until `c` may start by its pace; 0: now. */
  waitMs(c: ClaimedDelivery, now: number): number {
    let at = c.startAt ?? 0;
    if (this.rate !== null && this.count >= this.rate) at = Math.max(at, this.starts[this.count % this.rate]! + 1000);
    return Math.max(0, at - now);
  }

  started(now: number): void {
    if (this.rate === null) return;
    this.starts[this.count % this.rate] = now;
    this.count++;
  }
}

export class Lanes {
  private readonly lanes = new Map<number, Lane>();
  /** Lanes with a row that only the global cap keeps back, in the order they were kept back. */
  private readonly waiting = new Set<Lane>();
  /** Per listener seq, the rows held (started or ready): what the claim counts against each listener's hold. */
  readonly busy = new Map<number, number>();
  /** When each held row's lease runs out, less the time its request may take. */
  private readonly latestStart = new WeakMap<ClaimedDelivery, number>();
  held = 0;
  sending = 0;
  /** No row starts any more (the worker is stopping); `drain` then hands back the ones not started. */
  private halted = false;

  private readonly timers: Timers;

  constructor(private readonly o: LaneOptions) {
    this.timers = o.timers ?? realTimers;
  }

  halt(): void {
    this.halted = true;
    for (const lane of this.lanes.values()) this.timers.clear(lane.timer);
  }

  /** A claimed row joins its listener's lane, and starts if it may; true when it started. */
  take(c: ClaimedDelivery, latestStart: number): boolean {
    const lane = this.lanes.get(c.listener.seq) ?? this.open(c.listener.seq);
    lane.configure(c, this.o.listenerCap);
    lane.ready.push(c);
    lane.held++;
    this.held++;
    this.busy.set(lane.seq, lane.held);
    this.latestStart.set(c, latestStart);
    return this.pump(lane);
  }

  /** A request ended: other lanes waiting for a slot go first, then this one; true when a row started. */
  ended(c: ClaimedDelivery): boolean {
    const lane = this.lanes.get(c.listener.seq)!;
    lane.sending--;
    this.sending--;
    this.release(lane, 1);
    const others = this.unblock();
    return this.pump(lane) || others;
  }

  /** Every row held but not started, for the caller to give back (a stop); the lanes are emptied. */
  drain(): ClaimedDelivery[] {
    const rows: ClaimedDelivery[] = [];
    for (const lane of this.lanes.values()) {
      this.timers.clear(lane.timer);
      rows.push(...lane.ready.splice(0));
    }
    this.waiting.clear();
    return rows;
  }

  private open(seq: number): Lane {
    const lane = new Lane(seq);
    this.lanes.set(seq, lane);
    return lane;
  }

  private release(lane: Lane, n: number): void {
    lane.held -= n;
    this.held -= n;
    if (lane.held > 0) return void this.busy.set(lane.seq, lane.held);
    this.busy.delete(lane.seq);
    this.timers.clear(lane.timer);
    this.waiting.delete(lane);
    this.lanes.delete(lane.seq);
  }

  private unblock(): boolean {
    let started = false;
    for (const lane of this.waiting) {
      if (this.sending >= this.o.globalCap) break;
      this.waiting.delete(lane);
      started = this.pump(lane) || started;
    }
    return started;
  }

  /** Starts the lane's oldest rows while its listener, the worker and the pace allow. */
  private pump(lane: Lane): boolean {
    if (this.halted) return false;
    let started = false;
    while (lane.ready.length > 0 && lane.sending < lane.cap) {
      if (this.sending >= this.o.globalCap) {
        this.waiting.add(lane);
        break;
      }
      const c = lane.ready[0]!;
      const now = this.o.now();
      if (now > this.latestStart.get(c)!) {
        lane.ready.shift();
        this.release(lane, 1);
        this.o.expired(c);
        if (!this.lanes.has(lane.seq)) break;
        continue;
      }
      const wait = lane.waitMs(c, now);
      if (wait > 0) {
        this.arm(lane, wait);
        break;
      }
      lane.ready.shift();
      lane.sending++;
      this.sending++;
      lane.started(now);
      this.o.launch(c);
      started = true;
    }
    return started;
  }

  private arm(lane: Lane, wait: number): void {
    if (lane.timer !== undefined) return;
    lane.timer = this.timers.set(() => {
      lane.timer = undefined;
      if (this.lanes.get(lane.seq) === lane && this.pump(lane)) this.o.startedLater?.();
    }, wait);
  }
}
