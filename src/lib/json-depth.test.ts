import { expect, test } from "bun:test";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";

const arrays = (n: number) => "[".repeat(n) + "]".repeat(n);
const objects = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);

test("the limit itself passes and one level more is refused, for arrays, objects and mixes", () => {
  expect(nestsDeeperThan(arrays(MAX_JSON_DEPTH))).toBe(false);
  expect(nestsDeeperThan(arrays(MAX_JSON_DEPTH + 1))).toBe(true);
  expect(nestsDeeperThan(objects(MAX_JSON_DEPTH))).toBe(false);
  expect(nestsDeeperThan(objects(MAX_JSON_DEPTH + 1))).toBe(true);
  const mixed = '{"a":['.repeat(32) + "0" + "]}".repeat(32);
  expect(nestsDeeperThan(mixed)).toBe(false);
  expect(nestsDeeperThan(`[${mixed}]`)).toBe(true);
});

test("depth counts nesting, not brackets: many siblings at one level pass", () => {
  expect(nestsDeeperThan(`[${Array.from({ length: 5000 }, () => "[[]]").join(",")}]`)).toBe(false);
  expect(nestsDeeperThan(JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ i, tags: ["a", "b"] })) }))).toBe(false);
});

test("brackets inside strings do not count, escaped quotes and backslashes included", () => {
  const inString = JSON.stringify({ text: "[".repeat(500) + '"\\' + "{".repeat(500) });
  expect(nestsDeeperThan(inString)).toBe(false);
  expect(nestsDeeperThan(JSON.stringify(["\\", "[[[["]), 1)).toBe(false);
  expect(nestsDeeperThan(JSON.stringify(["\\\\\"", "[[[["]), 1)).toBe(false);
  expect(nestsDeeperThan('[["\\\\"]]', 1)).toBe(true);
  // A string that never closes hides the rest of the text, as it would from a parser (which then fails).
  expect(nestsDeeperThan('["' + "[".repeat(200), 1)).toBe(false);
});

test("a 20,000-deep body is found in one pass", () => {
  expect(nestsDeeperThan(arrays(20_000))).toBe(true);
  expect(nestsDeeperThan(objects(20_000))).toBe(true);
});
