import { expect, test } from "bun:test";
import { base62, fromBase62, idFloor, idTime, newId, randomBase62 } from "./ids.ts";

test("base62 codes have a fixed width, read back, and sort as their numbers do, repeated or not", () => {
  const now = 1_795_000_000_000;
  const codes = [0, 61, 62, now, now, now + 1, 62 ** 8 - 1].map((n) => base62(n, 8));
  expect(codes.every((c) => c.length === 8)).toBe(true);
  expect(codes.map(fromBase62)).toEqual([0, 61, 62, now, now, now + 1, 62 ** 8 - 1]);
  expect([...codes].sort()).toEqual(codes);
  // The same number at another width is its own code, not the remembered one.
  expect(base62(now + 1, 9)).toBe(`0${base62(now + 1, 8)}`);
});

test("random base62 strings have the asked length, use the whole alphabet and do not repeat", () => {
  const seen = new Set<string>();
  const chars = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const s = randomBase62(12); // 60,000 characters: several refills of the random pool
    expect(s).toMatch(/^[0-9A-Za-z]{12}$/);
    seen.add(s);
    for (const c of s) chars.add(c);
  }
  expect(seen.size).toBe(5000);
  expect(chars.size).toBe(62);
});

test("ids made in the same millisecond share their time digits and differ in the rest", () => {
  const a = newId("message", 1_795_000_000_000);
  const b = newId("message", 1_795_000_000_000);
  expect(a.slice(0, 12)).toBe(b.slice(0, 12));
  expect(a).not.toBe(b);
  expect(newId("message", 1_795_000_000_001) > a).toBe(true);
});

test("an id tells its creation time, and the floor of a time sorts below every id made then or later", () => {
  const t = 1_795_000_000_123;
  const id = newId("message", t);
  expect(idTime(id)).toBe(t);
  expect(idFloor("message", t) <= id).toBe(true);
  expect(idFloor("message", t + 1) > id).toBe(true);
  expect(newId("message", t - 1) < idFloor("message", t)).toBe(true);
});
