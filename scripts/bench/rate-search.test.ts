import { describe, expect, test } from "bun:test";
import { RateSearch, roundRate } from "./rate-search.ts";
import type { Step } from "./throughput-runs.ts";

/** A service that takes `capacity` msg/s: faster steps fall behind, their deliveries keeping up at capacity, or
 * (`behind` false) keep up but fail on their latency. */
function step(rate: number, capacity: number, behind: boolean): Step {
  const pass = rate <= capacity;
  return { rate, pass, reasons: pass ? [] : ["behind"], published: 0, achieved: rate, backlog: 0, keptUp: behind ? Math.min(rate, capacity) : rate,
    delivered: 0, expected: 0, timing: { count: 0, p50: null, p99: null, max: null }, publishP99: null, peakKb: 0 };
}

function run(estimate: number, capacity: number, behind = true, steps = 4): RateSearch {
  const search = new RateSearch(estimate, steps);
  for (let n = 0; search.next !== null; n++) {
    expect(n).toBeLessThan(steps + 1);
    search.record(step(search.next, capacity, behind));
  }
  return search;
}

describe("RateSearch", () => {
  test("ends within about 6 % below the capacity when the estimate is near it", () => {
    for (const behind of [true, false]) {
      for (const capacity of [700, 900, 1000, 1150, 1250]) {
        const best = run(1000, capacity, behind).best!.rate;
        expect(best).toBeLessThanOrEqual(capacity);
        expect(best).toBeGreaterThan(capacity * 0.9);
      }
    }
  });

  test("an estimate far too high still ends with a pass, near the capacity", () => {
    const search = run(10_000, 1000);
    expect(search.best!.rate).toBeLessThanOrEqual(1000);
    expect(search.best!.rate).toBeGreaterThan(800);
  });

  test("a capacity above every step tried is reported as a floor", () => {
    const search = run(1000, 5000);
    expect(search.capped).toBe(true);
    expect(run(1000, 1000).capped).toBe(false);
  });

  test("rates have three significant digits", () => {
    expect(roundRate(12_345)).toBe(12_300);
    expect(roundRate(987.6)).toBe(988);
    expect(roundRate(0.2)).toBe(1);
  });
});
