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
  /** Starts the request of `c` at `now`, the time counted against its rate; `ended(c)` must follow when it ends. */
  launch: (c: ClaimedDelivery, now: number) => void;
  /** A row that can no longer start within its lease: the caller gives it back. */
  expired: (c: ClaimedDelivery) => void;
  /** A row started by a pace timer rather than by a claim or a request's end. */
  startedLater?: () => void;
  /** The timers that wait for a pace (tests pass their own, driven by a manual clock). */
  timers?: Timers;
};

/** Rate windows kept beyond the open lanes before the idle ones are dropped. */
const KEPT_WINDOWS = 256;

export type Timers = { set(fn: () => void, ms: number): unknown; clear(handle: unknown): void };
const realTimers: Timers = { set: (fn, ms) => setTimeout(fn, ms), clear: (handle) => clearTimeout(handle as Timer) };

/**
 * A rate-limited listener's last `rate` start times on this worker, a ring: the next may start a second after
 * the oldest. It outlives the listener's lane (which goes when it holds no row), so a lane opened again a moment
 * later still counts the starts of the last second.
 */
class Window {
  private readonly starts: Float64Array;
  private count = 0;

  constructor(readonly rate: number) {
    this.starts = new Float64Array(rate);
  }

  /** The earliest time the next start keeps within the rate. */
  next(): number {
    return this.count < this.rate ? 0 : this.starts[this.count % this.rate]! + 1000;
  }

  started(now: number): void {
    this.starts[this.count % this.rate] = now;
    this.count++;
  }

  /** Whether its last start is a second old or more: it constrains nothing any more. */
  idle(now: number): boolean {
    return this.count === 0 || this.starts[(this.count - 1) % this.rate]! + 1000 <= now;
  }
}

class Lane {
  readonly ready: ClaimedDelivery[] = [];
  sending = 0;
  held = 0;
  cap = 1;
  window: Window | null = null;
  timer: unknown;

  constructor(readonly seq: number) {}

  /** Milliseconds until `c` may start by its pace; 0: now. */
  waitMs(c: ClaimedDelivery, now: number): number {
    return Math.max(0, Math.max(c.startAt ?? 0, this.window?.next() ?? 0) - now);
  }
}

export class Lanes {
  private readonly lanes = new Map<number, Lane>();
  /** Lanes with a row that only the global cap keeps back, in the order they were kept back. */
  private readonly waiting = new Set<Lane>();
  /** Rate windows by listener seq, kept while they still constrain a start (Window). */
  private readonly windows = new Map<number, Window>();
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
    this.configure(lane, c);
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

  /** The listener's settings as its newest claimed row carries them: changes apply to rows not yet started. */
  private configure(lane: Lane, c: ClaimedDelivery): void {
    lane.cap = c.listener.fifo ? 1 : (c.listener.concurrency ?? this.o.listenerCap);
    const rate = c.listener.rateLimit;
    if (rate === (lane.window?.rate ?? null)) return;
    const kept = rate === null ? undefined : this.windows.get(lane.seq);
    lane.window = rate === null ? null : kept?.rate === rate ? kept : new Window(rate);
    if (lane.window) this.windows.set(lane.seq, lane.window);
    else this.windows.delete(lane.seq);
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
    // Windows of listeners with no lane are history; once there are many, the ones a second old go.
    if (this.windows.size <= this.lanes.size + KEPT_WINDOWS) return;
    const now = this.o.now();
    for (const [seq, window] of this.windows) if (!this.lanes.has(seq) && window.idle(now)) this.windows.delete(seq);
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
      lane.window?.started(now);
      this.o.launch(c, now);
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
