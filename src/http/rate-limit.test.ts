import { describe, expect, test } from "bun:test";
import { createRateLimiter, rateLimitHeaders, retryAfterSeconds } from "./rate-limit.ts";

const T0 = 1_700_000_040_000; // 40 s into a minute

describe("rate limiter", () => {
  test("counts down within a window and refuses past the limit", () => {
    const limiter = createRateLimiter({ limit: 3 });
    const decisions = [1, 2, 3, 4].map((i) => limiter.take("k", T0 + i));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    expect(decisions[0]!.resetAt).toBe(1_700_000_100_000);
    expect(decisions[0]!.limit).toBe(3);
  });

  test("starts again at the next minute boundary", () => {
    const limiter = createRateLimiter({ limit: 1 });
    expect(limiter.take("k", T0).allowed).toBe(true);
    expect(limiter.take("k", 1_700_000_099_999).allowed).toBe(false);
    const next = limiter.take("k", 1_700_000_100_000);
    expect(next).toEqual({ allowed: true, limit: 1, remaining: 0, resetAt: 1_700_000_160_000 });
  });

  test("keeps keys apart", () => {
    const limiter = createRateLimiter({ limit: 1 });
    expect(limiter.take("a", T0).allowed).toBe(true);
    expect(limiter.take("b", T0).allowed).toBe(true);
    expect(limiter.take("a", T0).allowed).toBe(false);
  });

  test("stays within maxKeys, forgetting the oldest window first", () => {
    const limiter = createRateLimiter({ limit: 1, maxKeys: 3 });
    limiter.take("old", T0 - 60_000);
    for (const key of ["a", "b"]) limiter.take(key, T0);
    limiter.take("c", T0);
    expect(limiter.size).toBe(3);
    // "old" was evicted, "a" still counts.
    expect(limiter.take("a", T0).allowed).toBe(false);
    for (let i = 0; i < 1000; i++) limiter.take(`flood-${i}`, T0);
    expect(limiter.size).toBe(3);
  });

  test("renders the headers in epoch seconds and a Retry-After of at least one second", () => {
    const d = createRateLimiter({ limit: 5 }).take("k", T0);
    expect(rateLimitHeaders(d)).toEqual({ "x-ratelimit-limit": "5", "x-ratelimit-remaining": "4", "x-ratelimit-reset": "1700000100" });
    expect(retryAfterSeconds(T0 + 20_000, T0)).toBe("20");
    expect(retryAfterSeconds(T0 + 1, T0)).toBe("1");
    expect(retryAfterSeconds(T0, T0)).toBe("1");
  });
});
