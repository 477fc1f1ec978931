// Duration syntax shared by flags and variables: a whole number followed by one unit, `250ms`, `5s`, `2m`, `1h`, `30d`.
// Fractions ("1.5s") and compounds ("1h30m") are refused on purpose: every accepted text maps to an exact
// number of milliseconds, and there is one way to write each value.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Largest delay a timer accepts; setTimeout fires at once for anything longer (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds for a duration text, or undefined when the text is not a duration. */
export function durationToMs(text: string): number | undefined {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}
