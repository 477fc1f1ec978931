// Retry policy, pure: time and randomness come in as arguments so the store and tests stay deterministic.
//
// After failed attempt k (1-based) the next attempt waits schedule[k-1] ± 10 % jitter; once the schedule is
// spent the delivery is missed. Jitter spreads the retries of a burst that failed together (a listener
// outage) so they do not all return in the same instant.

/** `gone`: the receiver answered 410 Gone; its listener is paused and the delivery waits (docs/delivery.md). */
export type Outcome = { kind: "ack" } | { kind: "fail"; retryAfterMs?: number } | { kind: "gone" };

export type NextAttempt = { state: "acknowledged" } | { state: "pending"; at: number } | { state: "missed" } | { state: "gone" };

const JITTER = 0.1;

export function nextAttempt(
  attempt: number,
  outcome: Outcome,
  now: number,
  scheduleMs: number[],
  random: () => number = Math.random,
): NextAttempt {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be >= 1, got ${attempt}`);
  if (outcome.kind === "ack") return { state: "acknowledged" };
  if (outcome.kind === "gone") return { state: "gone" };
  if (attempt > scheduleMs.length) return { state: "missed" };
  const base = scheduleMs[attempt - 1]!;
  const jittered = base * (1 + (random() * 2 - 1) * JITTER);
  // A Retry-After is honoured, but never beyond the jittered scheduled delay (docs/delivery.md): unbounded, it
  // would let one listener park a delivery past the schedule's total, where it would count as missed without its
  // retries having been used.
  const delay = outcome.retryAfterMs === undefined ? jittered : Math.min(Math.max(outcome.retryAfterMs, 0), jittered);
  return { state: "pending", at: now + Math.round(delay) };
}

// Retry-After is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). Anything else is ignored rather
// than guessed at: a misparsed value would silently change when the listener is hit next.
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // Date.parse turns bare numbers such as "-5" or "1.5" into dates; an HTTP date always names day and month.
  if (!/[a-z]/i.test(value)) return undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(date - now, 0);
}

// A delivery held while its listener is down counts as missed once it has waited longer than this.
export function scheduleTotalMs(scheduleMs: number[]): number {
  return scheduleMs.reduce((sum, delay) => sum + delay, 0);
}
