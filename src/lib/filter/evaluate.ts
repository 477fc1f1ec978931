/**
 * The compiled form of a filter's `data` part and its evaluation. Each node is visited at most once per message,
 * so matching is linear in the filter, plus comparing the values it touches (bounded by the filter's literals)
 * and searching strings (linear, text-search.ts).
 */
import { compareCodePoints, isRecord, jsonEqual } from "./json-values.ts";
import { indexOfNeedle, type Meter, type Needle } from "./text-search.ts";

export type Condition =
  | { kind: "all"; items: Condition[] }
  | { kind: "any"; items: Condition[] }
  | { kind: "not"; item: Condition }
  | { kind: "path"; segments: string[]; indexes: number[]; tests: Test[] };

export type Test =
  | { op: "$eq" | "$ne"; value: unknown }
  | { op: "$gt" | "$gte" | "$lt" | "$lte"; value: number | string }
  | { op: "$in" | "$nin"; scalars: Set<unknown>; composites: unknown[] }
  | { op: "$exists"; value: boolean }
  | { op: "$prefix"; value: string }
  | { op: "$contains"; value: unknown; needle: Needle | null };

/** A segment that is no array index: on an array it reads nothing. */
export const NOT_AN_INDEX = -1;

export function evaluate(condition: Condition, data: unknown, meter?: Meter): boolean {
  if (meter !== undefined) meter.steps++;
  switch (condition.kind) {
    case "all":
      for (const item of condition.items) if (!evaluate(item, data, meter)) return false;
      return true;
    case "any":
      for (const item of condition.items) if (evaluate(item, data, meter)) return true;
      return false;
    case "not":
      return !evaluate(condition.item, data, meter);
    case "path": {
      const value = resolve(data, condition.segments, condition.indexes, meter);
      for (const test of condition.tests) if (!holds(test, value, meter)) return false;
      return true;
    }
  }
}

/** The value at a dot path, or undefined when it is missing (JSON has no undefined, so nothing is confused with it). */
function resolve(data: unknown, segments: string[], indexes: number[], meter?: Meter): unknown {
  let value = data;
  for (let i = 0; i < segments.length; i++) {
    if (meter !== undefined) meter.steps++;
    if (Array.isArray(value)) {
      const index = indexes[i]!;
      if (index === NOT_AN_INDEX || index >= value.length) return undefined;
      value = value[index];
    } else if (isRecord(value)) {
      const key = segments[i]!;
      if (!Object.hasOwn(value, key)) return undefined;
      value = value[key];
    } else {
      return undefined;
    }
  }
  return value;
}

/** `value` is undefined for a missing path, which only `$exists: false`, `$ne` and `$nin` accept. */
function holds(test: Test, value: unknown, meter?: Meter): boolean {
  if (meter !== undefined) meter.steps++;
  switch (test.op) {
    case "$eq":
      return value !== undefined && jsonEqual(value, test.value, meter);
    case "$ne":
      return value === undefined || !jsonEqual(value, test.value, meter);
    case "$gt":
      return order(value, test.value, meter) > 0;
    case "$gte":
      return order(value, test.value, meter) >= 0;
    case "$lt":
      return order(value, test.value, meter) < 0;
    case "$lte":
      return order(value, test.value, meter) <= 0;
    case "$in":
      return value !== undefined && isAmong(value, test.scalars, test.composites, meter);
    case "$nin":
      return value === undefined || !isAmong(value, test.scalars, test.composites, meter);
    case "$exists":
      return (value !== undefined) === test.value;
    case "$prefix":
      if (meter !== undefined) meter.steps += test.value.length;
      return typeof value === "string" && value.startsWith(test.value);
    case "$contains":
      return contains(value, test.value, test.needle, meter);
  }
}

/** How `value` compares with the bound, or NaN (which every comparison above refuses) across types. */
function order(value: unknown, bound: number | string, meter?: Meter): number {
  if (typeof bound === "number") return typeof value === "number" ? value - bound : NaN;
  return typeof value === "string" ? compareCodePoints(value, bound, meter) : NaN;
}

/** Scalars sit in a Set (same type and value, as JSON equality wants); objects and arrays are compared whole. */
function isAmong(value: unknown, scalars: Set<unknown>, composites: unknown[], meter?: Meter): boolean {
  if (typeof value !== "object" || value === null) return scalars.has(value);
  for (const composite of composites) if (jsonEqual(value, composite, meter)) return true;
  return false;
}

function contains(value: unknown, wanted: unknown, needle: Needle | null, meter?: Meter): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (jsonEqual(item, wanted, meter)) return true;
    return false;
  }
  if (typeof value !== "string" || needle === null) return false;
  return indexOfNeedle(value, needle, 0, value.length, meter) !== -1;
}
