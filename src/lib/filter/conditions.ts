/**
 * Checks a filter's `data` part and compiles it (evaluate.ts runs the result). A condition object's keys are
 * dot paths or the combinators `$and`, `$or`, `$not`; a path's value is an object of operators when every key
 * starts with `$`, a literal compared whole when none does, and refused when it mixes both, since the mix would
 * otherwise silently compare as a literal no message holds.
 */
import { NOT_AN_INDEX, type Condition, type Test } from "./evaluate.ts";
import { isRecord } from "./json-values.ts";
import { FILTER_LIMITS, type FilterProblems } from "./limits.ts";
import { pointerSegment } from "../json-pointer.ts";
import { compileNeedle } from "./text-search.ts";

const OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$prefix", "$contains"] as const;
type Operator = (typeof OPERATORS)[number];
const isOperator = (key: string): key is Operator => (OPERATORS as readonly string[]).includes(key);
const COMBINATORS = ["$and", "$or", "$not"];

/** `depth` is the level of `value` (`data` itself is 1). Null when it cannot compile; the reason is in `problems`. */
export function compileConditions(value: unknown, path: string, depth: number, problems: FilterProblems): Condition | null {
  if (!isRecord(value)) {
    problems.add(path, "must be an object of conditions (dot paths, $and, $or, $not)");
    return null;
  }
  if (problems.tooDeep(path, depth)) return null;
  const items: Condition[] = [];
  for (const key of Object.keys(value)) {
    const keyPath = path + pointerSegment(key);
    problems.count(keyPath);
    const item = key.startsWith("$")
      ? compileCombinator(key, value[key], keyPath, depth, problems)
      : compilePath(key, value[key], keyPath, depth, problems);
    if (item !== null) items.push(item);
  }
  return items.length === 1 ? items[0]! : { kind: "all", items };
}

function compileCombinator(key: string, value: unknown, path: string, depth: number, problems: FilterProblems): Condition | null {
  if (key === "$not") {
    const item = compileConditions(value, path, depth + 1, problems);
    return item === null ? null : { kind: "not", item };
  }
  if (key !== "$and" && key !== "$or") {
    const hint = isOperator(key) ? `; operators go in a path's value, as in {"total": {"${key}": …}}` : "";
    problems.add(path, `is not a combinator: condition objects combine with $and, $or and $not${hint}`);
    return null;
  }
  if (!Array.isArray(value) || value.length === 0) {
    problems.add(path, "must be a non-empty array of condition objects");
    return null;
  }
  if (problems.tooDeep(path, depth + 1)) return null;
  const items: Condition[] = [];
  value.forEach((member, i) => {
    const item = compileConditions(member, path + pointerSegment(i), depth + 2, problems);
    if (item !== null) items.push(item);
  });
  return { kind: key === "$and" ? "all" : "any", items };
}

function compilePath(key: string, value: unknown, path: string, depth: number, problems: FilterProblems): Condition | null {
  const segments = key.split(".");
  let ok = true;
  if (segments.includes("")) {
    problems.add(path, "is not a dot path: a segment is empty");
    ok = false;
  } else if (segments.length > FILTER_LIMITS.segments) {
    problems.add(path, `is a path of ${segments.length} segments; at most ${FILTER_LIMITS.segments}`);
    ok = false;
  }
  const tests = compileValue(value, path, depth + 1, problems);
  if (!ok || tests === null) return null;
  return { kind: "path", segments, indexes: segments.map(arrayIndex), tests };
}

/** A segment of digits without a leading zero indexes an array; any other reads nothing from one. */
function arrayIndex(segment: string): number {
  if (segment.length > 1 && segment.charCodeAt(0) === 0x30) return NOT_AN_INDEX;
  for (let i = 0; i < segment.length; i++) {
    const c = segment.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return NOT_AN_INDEX;
  }
  // Past the largest safe integer no array reaches; MAX_VALUE keeps it out of range without losing the rule.
  const index = Number(segment);
  return Number.isSafeInteger(index) ? index : Number.MAX_VALUE;
}

/** A path's value at level `depth`: tests that must all hold. */
function compileValue(value: unknown, path: string, depth: number, problems: FilterProblems): Test[] | null {
  if (!isRecord(value)) return checkLiteral(value, path, depth, problems) ? [{ op: "$eq", value }] : null;
  const keys = Object.keys(value);
  const operators = keys.filter((key) => key.startsWith("$"));
  if (operators.length === 0) return checkLiteral(value, path, depth, problems) ? [{ op: "$eq", value }] : null;
  if (operators.length < keys.length) {
    const plain = keys.find((key) => !key.startsWith("$"));
    problems.add(
      path,
      `mixes operators (${operators[0]}) with plain keys (${plain}): an object of operators holds only keys starting with $; ` +
        `name a nested value with a dot path (a.b), or compare an object whole with $eq`,
    );
    return null;
  }
  if (problems.tooDeep(path, depth)) return null;
  const tests: Test[] = [];
  for (const key of keys) {
    const operatorPath = path + pointerSegment(key);
    problems.count(operatorPath);
    const test = compileTest(key, value[key], operatorPath, depth, problems);
    if (test !== null) tests.push(test);
  }
  return tests.length === keys.length ? tests : null;
}

/** One operator of an operator object at level `depth`. */
function compileTest(key: string, argument: unknown, path: string, depth: number, problems: FilterProblems): Test | null {
  if (!isOperator(key)) {
    const message = COMBINATORS.includes(key)
      ? `is not an operator: ${key} combines condition objects, as in {"${key}": ${key === "$not" ? `{"a": 1}` : `[{"a": 1}, {"b": 2}]`}}`
      : `is not an operator; the operators are ${OPERATORS.join(", ")}`;
    problems.add(path, message);
    return null;
  }
  switch (key) {
    case "$eq":
    case "$ne":
      return checkLiteral(argument, path, depth + 1, problems) ? { op: key, value: argument } : null;
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
      if (typeof argument === "number" || typeof argument === "string") return { op: key, value: argument };
      problems.add(path, "must be a number or a string");
      return null;
    case "$in":
    case "$nin":
      return compileSet(key, argument, path, depth, problems);
    case "$exists":
      if (typeof argument === "boolean") return { op: key, value: argument };
      problems.add(path, "must be true or false");
      return null;
    case "$prefix":
      if (typeof argument === "string") return { op: key, value: argument };
      problems.add(path, "must be a string");
      return null;
    case "$contains":
      if (!checkLiteral(argument, path, depth + 1, problems)) return null;
      return { op: key, value: argument, needle: typeof argument === "string" ? compileNeedle(argument) : null };
  }
}

function compileSet(op: "$in" | "$nin", argument: unknown, path: string, depth: number, problems: FilterProblems): Test | null {
  if (!Array.isArray(argument) || argument.length > FILTER_LIMITS.inValues) {
    problems.add(path, `must be an array of at most ${FILTER_LIMITS.inValues} values`);
    return null;
  }
  if (problems.tooDeep(path, depth + 1)) return null;
  const scalars = new Set<unknown>();
  const composites: unknown[] = [];
  let ok = true;
  argument.forEach((item, i) => {
    if (!checkLiteral(item, path + pointerSegment(i), depth + 2, problems)) ok = false;
    else if (typeof item === "object" && item !== null) composites.push(item);
    else scalars.add(item);
  });
  return ok ? { op, scalars, composites } : null;
}

/** A literal's objects and arrays count toward the nesting limit like the filter's own; `value` is parsed JSON. */
function checkLiteral(value: unknown, path: string, depth: number, problems: FilterProblems): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (problems.tooDeep(path, depth)) return false;
  let ok = true;
  for (const [key, item] of Object.entries(value)) {
    if (!checkLiteral(item, path + pointerSegment(key), depth + 1, problems)) ok = false;
  }
  return ok;
}
