/**
 * Rate limiting per API key (docs/delivery.md): a fixed window per wall-clock minute, the same for
 * every key, so `X-RateLimit-Reset` is simply the next minute boundary. A burst straddling a boundary can pass
 * up to twice the limit within a moment; that is the accepted price of O(1) time and one small entry per key.
 *
 * Memory is bounded: at most `maxKeys` entries. The Map keeps insertion order and an entry is re-inserted when
 * it moves to a new window, so the first entry is the one whose window is oldest and is evicted first. Only past
 * `maxKeys` keys active in the same minute does an eviction forget a live count (that key starts again at 0).
 */

export const MINUTE_MS = 60_000;

export type RateLimitOptions = { limit: number; windowMs?: number; maxKeys?: number };

export type RateDecision = {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms at which the current window ends. */
  resetAt: number;
};

export interface RateLimiter {
  /** Counts one request of `key` at `now` and says whether it is within the limit. */
  take(key: string, now: number): RateDecision;
  readonly size: number;
}

type Entry = { window: number; count: number };

export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const windowMs = options.windowMs ?? MINUTE_MS;
  const maxKeys = options.maxKeys ?? 100_000;
  const entries = new Map<string, Entry>();

  function entryOf(key: string, window: number): Entry {
    const entry = entries.get(key);
    if (entry && entry.window === window) return entry;
    if (entry) entries.delete(key);
    else if (entries.size >= maxKeys) entries.delete(entries.keys().next().value!);
    const fresh = { window, count: 0 };
    entries.set(key, fresh);
    return fresh;
  }

  return {
    take(key, now) {
      const window = Math.floor(now / windowMs);
      const entry = entryOf(key, window);
      entry.count++;
      const limit = options.limit;
      return { allowed: entry.count <= limit, limit, remaining: Math.max(0, limit - entry.count), resetAt: (window + 1) * windowMs };
    },
    get size() {
      return entries.size;
    },
  };
}

/** The three X-RateLimit headers; the reset time is in UTC epoch seconds. */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  return {
    "x-ratelimit-limit": String(d.limit),
    "x-ratelimit-remaining": String(d.remaining),
    "x-ratelimit-reset": String(Math.ceil(d.resetAt / 1000)),
  };
}

/** Whole seconds until `until`, at least 1: `Retry-After: 0` would invite an immediate retry. */
export function retryAfterSeconds(until: number, now: number): string {
  return String(Math.max(1, Math.ceil((until - now) / 1000)));
}
