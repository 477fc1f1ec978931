import { describe, expect, test } from "bun:test";
import { nextLiveness, type Liveness } from "./liveness";

const after = (start: Liveness, outcomes: boolean[]) => outcomes.reduce(nextLiveness, start);
const pending: Liveness = { state: "pending", failuresInRow: 0 };

describe("nextLiveness", () => {
  test("one success makes any state stable and clears the failures in a row", () => {
    for (const state of ["pending", "stable", "unstable", "down"] as const) {
      expect(nextLiveness({ state, failuresInRow: 7 }, true)).toEqual({ state: "stable", failuresInRow: 0 });
    }
  });

  test("one or two failures in a row are unstable, the third is down", () => {
    expect(after(pending, [false])).toEqual({ state: "unstable", failuresInRow: 1 });
    expect(after(pending, [true, false, false])).toEqual({ state: "unstable", failuresInRow: 2 });
    expect(after(pending, [false, false, false])).toEqual({ state: "down", failuresInRow: 3 });
    expect(after(pending, [false, false, false, false])).toEqual({ state: "down", failuresInRow: 4 });
  });

  test("a success in between starts the count again", () => {
    expect(after(pending, [false, false, true, false, false])).toEqual({ state: "unstable", failuresInRow: 2 });
  });
});
