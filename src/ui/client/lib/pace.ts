/**
 * A listener's current pace, worked out in the browser: the change of its acknowledged count between two polls
 * of the listener list, over the time between them. The API keeps no rate of its own.
 */

/** The count and time a rate is measured from, and the rate last measured (null until two polls agree). */
export type PaceSample = { count: number; at: number; rate: number | null };

/** Closer polls (a refresh right after an action) measure noise: the older sample stays the baseline. */
const MIN_SPAN_MS = 1000;
/** Longer gaps (a tab in the background) would give an average of minutes ago, not a current pace. */
const MAX_SPAN_MS = 15_000;

export function nextSample(previous: PaceSample | undefined, count: number, at: number): PaceSample {
  if (!previous) return { count, at, rate: null };
  const span = at - previous.at;
  if (span < MIN_SPAN_MS && span >= 0) return previous;
  // A count that went down (retention deleted old deliveries) or a clock that went back starts over.
  if (span > MAX_SPAN_MS || span < 0 || count < previous.count) return { count, at, rate: null };
  return { count, at, rate: ((count - previous.count) * 1000) / span };
}

/** "0", "0.5", "2.5", "12", "1,250": a decimal only where it says something (below ten). */
export function rate(perSecond: number): string {
  if (perSecond >= 10) return Math.round(perSecond).toLocaleString();
  const tenths = Math.round(perSecond * 10) / 10;
  return tenths === Math.trunc(tenths) ? String(tenths) : tenths.toFixed(1);
}
