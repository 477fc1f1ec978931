/** The dashboard's current pace of a listener, from its acknowledged count at two polls. */
import { expect, test } from "bun:test";
import { nextSample, rate } from "../../src/ui/client/lib/pace.ts";

test("the first poll gives a baseline, the next a rate over the time between them", () => {
  const first = nextSample(undefined, 100, 10_000);
  expect(first).toEqual({ count: 100, at: 10_000, rate: null });
  expect(nextSample(first, 140, 12_000)).toEqual({ count: 140, at: 12_000, rate: 20 });
});

test("a poll less than a second after the baseline keeps it, and the rate last measured", () => {
  const measured = { count: 140, at: 12_000, rate: 20 };
  expect(nextSample(measured, 150, 12_300)).toBe(measured);
  expect(nextSample(measured, 170, 13_000)).toEqual({ count: 170, at: 13_000, rate: 30 });
});

test("a long gap, a count that went down or a clock that went back start over", () => {
  const measured = { count: 140, at: 12_000, rate: 20 };
  expect(nextSample(measured, 400, 40_000)).toEqual({ count: 400, at: 40_000, rate: null });
  expect(nextSample(measured, 90, 14_000)).toEqual({ count: 90, at: 14_000, rate: null });
  expect(nextSample(measured, 150, 11_000)).toEqual({ count: 150, at: 11_000, rate: null });
});

test("rates read with a decimal only below ten", () => {
  expect([0, 0.04, 0.5, 2.46, 3, 9.96, 12.4, 125.6].map(rate)).toEqual(["0", "0", "0.5", "2.5", "3", "10", "12", "126"]);
});
