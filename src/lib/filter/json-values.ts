/**
 * Equality and order of JSON values as filters define them: equal means same type and same value, objects
 * (whatever their key order) and arrays compared whole; numbers compare as numbers, so 1 and 1.0 are equal;
 * strings order by Unicode code points, never by locale.
 */
import type { Meter } from "./text-search.ts";

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `expected` comes from the filter, `actual` from a message. The work is bounded by the filter's literal: an
 * object's keys are counted only until they outnumber the literal's, so a huge message object costs no more
 * than a small one.
 */
export function jsonEqual(actual: unknown, expected: unknown, meter?: Meter): boolean {
  if (meter !== undefined) meter.steps++;
  if (typeof expected !== "object" || expected === null) return actual === expected;
  if (typeof actual !== "object" || actual === null) return false;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return false;
    for (let i = 0; i < expected.length; i++) if (!jsonEqual(actual[i], expected[i], meter)) return false;
    return true;
  }
  if (Array.isArray(actual)) return false;
  const record = actual as Record<string, unknown>;
  let expectedKeys = 0;
  for (const key in expected) {
    expectedKeys++;
    if (!Object.hasOwn(record, key) || !jsonEqual(record[key], (expected as Record<string, unknown>)[key], meter)) return false;
  }
  let actualKeys = 0;
  // Parsed JSON objects have no enumerable inherited keys, so for-in sees exactly the own keys.
  for (const _ in record) {
    if (meter !== undefined) meter.steps++;
    if (++actualKeys > expectedKeys) return false;
  }
  return true;
}

/**
 * Negative, zero or positive as `a` sorts before, with or after `b` by code points. UTF-16 code units order the
 * same except that a surrogate (U+D800-U+DFFF, half of a code point above U+FFFF) must sort after U+E000-U+FFFF.
 */
export function compareCodePoints(a: string, b: string, meter?: Meter): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (meter !== undefined) meter.steps += i + 1;
  if (i === n) return a.length - b.length;
  return codePointRank(a.charCodeAt(i)) - codePointRank(b.charCodeAt(i));
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
