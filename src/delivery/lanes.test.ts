// When held rows start (lanes.ts), on a manual clock with timers the test fires itself.
import { expect, test } from "bun:test";
import { Lanes, type Timers } from "./lanes.ts";
import { manualClock } from "../lib/clock.ts";
import type { ClaimedDelivery, Pace } from "../store/deliveries.ts";

let nextId = 1;
function row(seq: number, pace: Partial<Pace> = {}, startAt: number | null = null): ClaimedDelivery {
  const id = nextId++;
  return {
    id, token: "t", attempt: 0, startAt,
    listener: { seq, id: `lst_${seq}`, orgId: "org", notifyUrl: "http://127.0.0.1/", secrets: ["s"], held: false, headers: null,
      concurrency: null, rateLimit: null, fifo: false, ...pace },
    message: { id: `msg_${id}`, name: null, queue: { id: "q", name: "q" }, data: "1", createdAt: 0 },
  };
}

/** Timers fired by the test: `advance` moves the clock and runs every timer due by then, in order. */
function fakeTimers(clock: ReturnType<typeof manualClock>) {
  let pending: { at: number; fn: () => void; handle: number }[] = [];
  let handles = 0;
  const timers: Timers = {
    set: (fn, ms) => {
      const handle = ++handles;
      pending.push({ at: clock.now() + ms, fn, handle });
      return handle;
    },
    clear: (handle) => void (pending = pending.filter((t) => t.handle !== handle)),
  };
  const advance = (ms: number) => {
    const end = clock.now() + ms;
    for (;;) {
      const due = pending.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      pending = pending.filter((t) => t !== due);
      clock.set(Math.max(clock.now(), due.at));
      due.fn();
    }
    clock.set(end);
  };
  return { timers, advance };
}

function setUp(globalCap = 10, listenerCap = 4) {
  const clock = manualClock(1_000_000);
  const { timers, advance } = fakeTimers(clock);
  const started: { c: ClaimedDelivery; at: number }[] = [];
  const expired: ClaimedDelivery[] = [];
  const lanes = new Lanes({ globalCap, listenerCap, now: clock.now, timers, launch: (c) => started.push({ c, at: clock.now() }), expired: (c) => expired.push(c) });
  const running = () => started.filter((s) => !ended.has(s.c));
  const ended = new Set<ClaimedDelivery>();
  const end = (c: ClaimedDelivery) => (ended.add(c), lanes.ended(c));
  return { clock, advance, lanes, started, expired, running, end };
}

const FAR = Number.MAX_SAFE_INTEGER;

test("requests in flight stay within the global cap and each listener's concurrency; freed slots go to waiting lanes in turn", () => {
  const { lanes, running, end } = setUp(3, 2);
  for (let i = 0; i < 4; i++) lanes.take(row(1), FAR);
  for (let i = 0; i < 4; i++) lanes.take(row(2, { concurrency: 1 }), FAR);
  expect(running().map((s) => s.c.listener.seq)).toEqual([1, 1, 2]);
  expect(lanes.sending).toBe(3);
  // Listener 1's request ends: listener 2 is at its own cap, so listener 1 takes the slot again.
  end(running()[0]!.c);
  expect(running().map((s) => s.c.listener.seq)).toEqual([1, 2, 1]);
  expect(lanes.busy.get(1)).toBe(3);
  expect(lanes.busy.get(2)).toBe(4);
});

test("a lane kept back by the global cap is served before the lane whose request freed the slot", () => {
  const { lanes, running, end } = setUp(2, 2);
  const a = [row(1), row(1), row(1)];
  for (const c of a) lanes.take(c, FAR);
  lanes.take(row(2), FAR); // the global cap is full: listener 2 waits
  expect(running().map((s) => s.c.listener.seq)).toEqual([1, 1]);
  end(a[0]!);
  expect(running().map((s) => s.c.listener.seq)).toEqual([1, 2]);
});

test("a FIFO listener sends one at a time, in the order its rows came", () => {
  const { lanes, running, end } = setUp();
  const rows = [row(7, { fifo: true, concurrency: 1 }), row(7, { fifo: true }), row(7, { fifo: true })];
  for (const c of rows) lanes.take(c, FAR);
  expect(running().map((s) => s.c.id)).toEqual([rows[0]!.id]);
  end(rows[0]!);
  expect(running().map((s) => s.c.id)).toEqual([rows[1]!.id]);
});

test("a rate limit never starts more than the rate in any second, and a start slot is kept", () => {
  const { lanes, started, advance, clock, end, running } = setUp(100, 100);
  const t0 = clock.now();
  for (let i = 0; i < 25; i++) lanes.take(row(3, { rateLimit: 10, concurrency: 100 }, i === 24 ? t0 + 4_500 : null), FAR);
  for (let step = 0; step < 60; step++) {
    for (const s of [...running()]) end(s.c);
    advance(100);
  }
  const times = started.map((s) => s.at);
  expect(times).toHaveLength(25);
  for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(10);
  expect(times[24]).toBeGreaterThanOrEqual(t0 + 4_500);
});

test("a row that could not start within its lease goes back instead", () => {
  const { lanes, expired, running, clock, end } = setUp(1, 1);
  const first = row(1);
  const late = row(2);
  lanes.take(first, FAR);
  lanes.take(late, clock.now() + 100);
  clock.advance(200);
  end(first);
  expect(expired.map((c) => c.id)).toEqual([late.id]);
  expect(running()).toEqual([]);
  expect(lanes.held).toBe(0);
});

test("halted lanes start nothing, and drain hands back the rows not started", () => {
  const { lanes, running } = setUp(1, 1);
  const rows = [row(1), row(1), row(1)];
  for (const c of rows) lanes.take(c, FAR);
  lanes.halt();
  expect(lanes.drain().map((c) => c.id)).toEqual([rows[1]!.id, rows[2]!.id]);
  expect(running()).toHaveLength(1);
});
