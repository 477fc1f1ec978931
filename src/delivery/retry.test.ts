import { describe, expect, test } from "bun:test";
import { nextAttempt, parseRetryAfter, scheduleTotalMs } from "./retry";

const schedule = [5_000, 300_000, 1_800_000];
const now = 1_700_000_000_000;
const fail = { kind: "fail" } as const;
const middle = () => 0.5;
const lowest = () => 0;
const highest = () => 0.999999;

describe("nextAttempt", () => {
  test("an ack is acknowledged whatever the attempt", () => {
    expect(nextAttempt(1, { kind: "ack" }, now, schedule, middle)).toEqual({ state: "acknowledged" });
    expect(nextAttempt(99, { kind: "ack" }, now, schedule, middle)).toEqual({ state: "acknowledged" });
  });

  test("failed attempt k waits schedule[k-1] when the jitter is neutral", () => {
    expect(nextAttempt(1, fail, now, schedule, middle)).toEqual({ state: "pending", at: now + 5_000 });
    expect(nextAttempt(2, fail, now, schedule, middle)).toEqual({ state: "pending", at: now + 300_000 });
    expect(nextAttempt(3, fail, now, schedule, middle)).toEqual({ state: "pending", at: now + 1_800_000 });
  });

  test("jitter stays within ±10 %", () => {
    expect(nextAttempt(2, fail, now, schedule, lowest)).toEqual({ state: "pending", at: now + 270_000 });
    const high = nextAttempt(2, fail, now, schedule, highest);
    expect(high.state).toBe("pending");
    if (high.state === "pending") {
      expect(high.at - now).toBeLessThanOrEqual(330_000);
      expect(high.at - now).toBeGreaterThan(329_990);
    }
  });

  test("a failure after the schedule is spent is missed", () => {
    expect(nextAttempt(4, fail, now, schedule, middle)).toEqual({ state: "missed" });
    expect(nextAttempt(1, fail, now, [], middle)).toEqual({ state: "missed" });
  });

  test("a shorter Retry-After is honoured", () => {
    expect(nextAttempt(2, { kind: "fail", retryAfterMs: 60_000 }, now, schedule, middle)).toEqual({
      state: "pending",
      at: now + 60_000,
    });
  });

  test("a longer Retry-After is capped at the jittered scheduled delay", () => {
    const outcome = { kind: "fail", retryAfterMs: 86_400_000 } as const;
    expect(nextAttempt(1, outcome, now, schedule, lowest)).toEqual({ state: "pending", at: now + 4_500 });
  });

  test("a negative Retry-After means now, and does not revive a spent schedule", () => {
    expect(nextAttempt(1, { kind: "fail", retryAfterMs: -5 }, now, schedule, middle)).toEqual({
      state: "pending",
      at: now,
    });
    expect(nextAttempt(4, { kind: "fail", retryAfterMs: 1 }, now, schedule, middle)).toEqual({ state: "missed" });
  });

  test("attempt numbers below 1 are a programming error", () => {
    expect(() => nextAttempt(0, fail, now, schedule, middle)).toThrow(RangeError);
    expect(() => nextAttempt(1.5, fail, now, schedule, middle)).toThrow(RangeError);
  });

  test("defaults to Math.random within the bounds", () => {
    for (let i = 0; i < 100; i++) {
      const next = nextAttempt(1, fail, now, schedule);
      if (next.state !== "pending") throw new Error("expected pending");
      expect(next.at - now).toBeGreaterThanOrEqual(4_500);
      expect(next.at - now).toBeLessThanOrEqual(5_500);
    }
  });
});

describe("parseRetryAfter", () => {
  test("delta-seconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  test("HTTP date, relative to now, never negative", () => {
    const base = Date.UTC(2025, 0, 1, 12, 0, 0);
    expect(parseRetryAfter("Wed, 01 Jan 2025 12:00:30 GMT", base)).toBe(30_000);
    expect(parseRetryAfter("Wed, 01 Jan 2025 11:00:00 GMT", base)).toBe(0);
  });

  test("absent or malformed values are ignored", () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter("", now)).toBeUndefined();
    expect(parseRetryAfter("-5", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
  });
});

describe("scheduleTotalMs", () => {
  test("sums the delays", () => {
    expect(scheduleTotalMs(schedule)).toBe(2_105_000);
    expect(scheduleTotalMs([])).toBe(0);
  });
});
