/**
 * Random filters against random documents, each judged by the compiled filter and by a reference evaluator
 * written straight from the rules (slow, small, and too plain to be wrong); and the work of matching, counted.
 */
import { describe, expect, test } from "bun:test";
import { canonicalFilter, compileFilter, matches, type CompiledFilter, type FilterSpec, type Meter } from "../filter.ts";
import { canonicalJson } from "../canonical-json.ts";

const MISSING = Symbol("missing");

function refMatches(spec: FilterSpec, name: string | null, data: unknown): boolean {
  if (spec.names !== undefined && (name === null || !spec.names.some((pattern) => refGlob(pattern, name)))) return false;
  return spec.data === undefined || refConditions(spec.data, data);
}

function refGlob(pattern: string, name: string): boolean {
  if (pattern === "") return name === "";
  if (pattern[0] === "*") {
    for (let i = 0; i <= name.length; i++) if (refGlob(pattern.slice(1), name.slice(i))) return true;
    return false;
  }
  return name[0] === pattern[0] && refGlob(pattern.slice(1), name.slice(1));
}

function refConditions(conditions: Record<string, unknown>, data: unknown): boolean {
  return Object.entries(conditions).every(([key, value]) => {
    if (key === "$and") return (value as Record<string, unknown>[]).every((c) => refConditions(c, data));
    if (key === "$or") return (value as Record<string, unknown>[]).some((c) => refConditions(c, data));
    if (key === "$not") return !refConditions(value as Record<string, unknown>, data);
    return refValue(lookup(data, key), value);
  });
}

function lookup(data: unknown, path: string): unknown {
  let value: unknown = data;
  for (const segment of path.split(".")) {
    if (Array.isArray(value)) value = /^(0|[1-9][0-9]*)$/.test(segment) && Number(segment) < value.length ? value[Number(segment)] : MISSING;
    else if (typeof value === "object" && value !== null && Object.hasOwn(value, segment)) value = (value as Record<string, unknown>)[segment];
    else return MISSING;
  }
  return value;
}

const isOperatorObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0 && Object.keys(value).every((k) => k.startsWith("$"));

function refValue(actual: unknown, expected: unknown): boolean {
  if (!isOperatorObject(expected)) return refEqual(actual, expected);
  return Object.entries(expected).every(([op, arg]) => refOperator(op, actual, arg));
}

const refEqual = (a: unknown, b: unknown) => a !== MISSING && canonicalJson(a) === canonicalJson(b);

/** Code points as numbers, compared one by one. */
function refCompare(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

function refOrder(a: unknown, b: unknown): number | null {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return refCompare(a, b);
  return null;
}

function refOperator(op: string, actual: unknown, arg: unknown): boolean {
  const order = refOrder(actual, arg);
  switch (op) {
    case "$eq": return refEqual(actual, arg);
    case "$ne": return !refEqual(actual, arg);
    case "$gt": return order !== null && order > 0;
    case "$gte": return order !== null && order >= 0;
    case "$lt": return order !== null && order < 0;
    case "$lte": return order !== null && order <= 0;
    case "$in": return (arg as unknown[]).some((v) => refEqual(actual, v));
    case "$nin": return !(arg as unknown[]).some((v) => refEqual(actual, v));
    case "$exists": return (actual !== MISSING) === arg;
    case "$prefix": return typeof actual === "string" && actual.slice(0, (arg as string).length) === arg;
    case "$contains":
      if (Array.isArray(actual)) return actual.some((v) => refEqual(v, arg));
      return typeof actual === "string" && typeof arg === "string" && actual.includes(arg);
  }
  throw new Error(`unknown operator ${op}`);
}

/** mulberry32: a seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}
type Random = ReturnType<typeof random>;

const KEYS = ["a", "b", "c", "0", "1"];
const SCALARS = [0, 1, -1, 1.5, 2, "", "a", "ab", "b", "ba", "é", "z", "😀", "｡", "1", null, true, false];
const ORDERED = [0, 1, -1, 1.5, "", "a", "ab", "é", "z", "😀", "｡"];

function randomValue(r: Random, depth: number): unknown {
  const roll = r.next();
  if (depth <= 0 || roll < 0.55) return r.pick(SCALARS);
  if (roll < 0.75) return Array.from({ length: r.int(4) }, () => randomValue(r, depth - 1));
  return Object.fromEntries(Array.from({ length: r.int(4) }, () => [r.pick(KEYS), randomValue(r, depth - 1)]));
}

const randomPath = (r: Random) => Array.from({ length: 1 + r.int(3) }, () => (r.next() < 0.1 ? "x" : r.pick(KEYS))).join(".");

function randomOperators(r: Random): Record<string, unknown> {
  const ops: Record<string, () => unknown> = {
    $eq: () => randomValue(r, 2), $ne: () => randomValue(r, 2),
    $gt: () => r.pick(ORDERED), $gte: () => r.pick(ORDERED), $lt: () => r.pick(ORDERED), $lte: () => r.pick(ORDERED),
    $in: () => Array.from({ length: r.int(5) }, () => randomValue(r, 1)), $nin: () => Array.from({ length: r.int(5) }, () => randomValue(r, 1)),
    $exists: () => r.next() < 0.5, $prefix: () => r.pick(["", "a", "é", "😀", "b"]), $contains: () => randomValue(r, 1),
  };
  const names = Object.keys(ops);
  return Object.fromEntries(Array.from({ length: 1 + r.int(3) }, () => { const op = r.pick(names); return [op, ops[op]!()]; }));
}

function randomConditions(r: Random, depth: number): Record<string, unknown> {
  const conditions: Record<string, unknown> = {};
  for (let i = 1 + r.int(3); i > 0; i--) {
    const roll = r.next();
    if (depth > 0 && roll < 0.1) conditions.$not = randomConditions(r, depth - 1);
    else if (depth > 0 && roll < 0.25) conditions[r.pick(["$and", "$or"])] = Array.from({ length: 1 + r.int(3) }, () => randomConditions(r, depth - 1));
    else conditions[randomPath(r)] = roll < 0.45 ? randomValue(r, 2) : randomOperators(r);
  }
  return conditions;
}

function randomFilter(r: Random): FilterSpec {
  const spec: FilterSpec = {};
  if (r.next() < 0.4) spec.names = Array.from({ length: 1 + r.int(3) }, () => Array.from({ length: 1 + r.int(8) }, () => r.pick(["a", "b", ".", "*"])).join(""));
  if (r.next() < 0.9) spec.data = randomConditions(r, 2);
  return spec;
}

const randomName = (r: Random) => (r.next() < 0.15 ? null : Array.from({ length: r.int(10) }, () => r.pick(["a", "b", "."])).join(""));

function compiled(spec: unknown): CompiledFilter {
  const result = compileFilter(spec);
  if (!result.ok) throw new Error(`refused ${JSON.stringify(spec)}: ${JSON.stringify(result.errors)}`);
  return result.filter;
}

describe("against the reference evaluator", () => {
  test("random filters on random documents agree, and their saved form compiles to the same", () => {
    const r = random(20_261_125);
    let matched = 0;
    for (let round = 0; round < 3000; round++) {
      const spec = randomFilter(r);
      const filter = compiled(spec);
      const again = compiled(JSON.parse(JSON.stringify(canonicalFilter(filter))));
      for (let doc = 0; doc < 10; doc++) {
        const name = randomName(r);
        const data = r.next() < 0.9 ? Object.fromEntries(Array.from({ length: r.int(5) }, () => [r.pick(KEYS), randomValue(r, 3)])) : randomValue(r, 3);
        const want = refMatches(spec, name, data);
        const subject = { name, data };
        expect({ spec, name, data, got: matches(filter, subject) }).toEqual({ spec, name, data, got: want });
        expect(matches(again, subject)).toBe(want);
        if (want) matched++;
      }
    }
    // Both outcomes are common, so agreement is not agreement on a constant.
    expect(matched).toBeGreaterThan(3000);
    expect(matched).toBeLessThan(27_000);
  });
});

describe("the work of matching, counted", () => {
  test("grows with the filter's conditions, linearly", () => {
    const steps = (n: number) => {
      const conditions = Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}.x`, { $ne: i, $exists: true }]));
      const data = Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, { x: -1 }]));
      const meter: Meter = { steps: 0 };
      expect(matches(compiled({ data: conditions }), { name: null, data }, meter)).toBe(true);
      return meter.steps;
    };
    expect(steps(60) - steps(40)).toBe(steps(40) - steps(20));
    expect(steps(60)).toBeLessThanOrEqual(60 * 8);
  });

  test("nested combinators visit each node once", () => {
    let conditions: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 2; i++) conditions = { $or: [{ $not: conditions }, { $not: conditions }, conditions] };
    const meter: Meter = { steps: 0 };
    expect(matches(compiled({ data: conditions }), { name: null, data: { a: 2 } }, meter)).toBe(true);
    // 9 path conditions, 6 $not and 4 $or: a few steps each, whichever way the $or's short-circuit.
    expect(meter.steps).toBeLessThanOrEqual(3 * (9 + 6 + 4));
  });

  test("$contains on a long string that nearly holds the needle everywhere is linear", () => {
    const needle = "a".repeat(999) + "b";
    const text = "a".repeat(200_000);
    const meter: Meter = { steps: 0 };
    expect(matches(compiled({ data: { s: { $contains: needle } } }), { name: null, data: { s: text } }, meter)).toBe(false);
    expect(meter.steps).toBeGreaterThanOrEqual(text.length);
    expect(meter.steps).toBeLessThanOrEqual(2 * text.length + needle.length + 10);
  });

  test("comparing a large message value with a small literal costs the literal's size, not the value's", () => {
    const big = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
    const list = Array.from({ length: 100_000 }, (_, i) => i);
    const meter: Meter = { steps: 0 };
    const filter = compiled({ data: { $or: [{ v: { k0: 0, k1: 1 } }, { v: [0, 1] }, { v: { $in: [{ k0: 0 }, [0]] } }] } });
    expect(matches(filter, { name: null, data: { v: big } }, meter)).toBe(false);
    expect(matches(filter, { name: null, data: { v: list } }, meter)).toBe(false);
    expect(meter.steps).toBeLessThan(50);
  });

  test("a name pattern of many stars against a long name", () => {
    const meter: Meter = { steps: 0 };
    const pattern = "*" + "a*".repeat(90) + "b*";
    const name = "a".repeat(128);
    expect(matches(compiled({ names: [pattern] }), { name, data: null }, meter)).toBe(false);
    expect(meter.steps).toBeLessThanOrEqual(2 * (name.length + pattern.length));
  });
});
