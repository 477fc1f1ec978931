/** Time is passed in everywhere so tests can drive it; this is the only place that reads the wall clock. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock a test moves by hand. */
export function manualClock(start = 1_700_000_000_000): Clock & { advance(ms: number): void; set(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms), set: (ms) => void (t = ms) };
}
