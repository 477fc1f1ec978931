import { expect, test } from "bun:test";
import { RE2JS } from "re2js";
import { compilePattern, MAX_PROGRAM, patternProblem, STEP_BUDGET } from "./patterns.ts";
import { schemaId, validateData, type QueueMessageSchema } from "./message-schema.ts";

test("nested quantifiers match in linear time: the input that takes a backtracking engine seconds", () => {
  // On JavaScript's engine this input takes about 2^30 steps.
  const nested = compilePattern("^(a+)+$");
  expect(nested.test(`${"a".repeat(30)}!`)).toBe(false);
  expect(nested.test("a".repeat(30))).toBe(true);
  const quadratic = compilePattern("\\d+\\d+x");
  expect(quadratic.test("1".repeat(100_000))).toBe(false);
});

test("lookaround and backreferences are refused, naming the construct", () => {
  for (const p of ["(?=a)b", "a(?!b)", "(?<=a)b", "(?<!a)b"]) expect(patternProblem(p)).toContain("lookaround");
  for (const p of ["(a)\\1", "(?<n>a)\\k<n>"]) expect(patternProblem(p)).toContain("backreference");
  expect(patternProblem("a{2,1}")).toContain("not a valid regular expression");
  expect(patternProblem("(")).toContain("not a valid regular expression");
});

test("ordinary patterns are accepted and match as ECMAScript's would", () => {
  const cases: [string, string, boolean][] = [
    ["^ord_[0-9]+$", "ord_42", true], ["^ord_[0-9]+$", "ORD-1", false], ["@", "a@b.example", true],
    ["^[^@]+@[^@]+$", "a@b@c", false], ["b+", "abba", true], ["^\\d{4}-\\d{2}-\\d{2}$", "2026-11-25", true],
    ["^(?:red|green)$", "green", true], ["\\bword\\b", "a word here", true], ["^.$", "😀", true],
  ];
  for (const [p, s, want] of cases) {
    expect({ p, s, problem: patternProblem(p) }).toEqual({ p, s, problem: null });
    expect({ p, s, got: compilePattern(p).test(s) }).toEqual({ p, s, got: want });
    expect({ p, s, js: new RegExp(p, "u").test(s) }).toEqual({ p, s, js: want });
  }
});

test("a pattern too large to run in bounded time is refused", () => {
  expect(patternProblem("(?:[a-z]{100}){10}")).toMatch(new RegExp(`too large.*at most ${MAX_PROGRAM}`));
});

test("a message may run only so much text through patterns; the rest fails with a reason", () => {
  const schema: QueueMessageSchema = { items: { type: "array", items: { type: "string", pattern: "^[a-z]+$" } } };
  const id = schemaId(schema);
  const size = RE2JS.compile("^[a-z]+$").matcher("").programSize();
  const within = Math.floor(STEP_BUDGET / size / 1000);
  expect(validateData(schema, id, { items: Array.from({ length: within }, () => "a".repeat(1000)) }).ok).toBe(true);
  const over = validateData(schema, id, { items: Array.from({ length: within + 2 }, () => "a".repeat(1000)) });
  expect(over.ok).toBe(false);
  if (!over.ok) expect(over.errors[0]!.message).toContain("more text than fanout checks against patterns");
});

test("each pattern's DFA has the small memory budget (re2js internals the bound relies on)", () => {
  const pattern = compilePattern("^(a|b)*a(a|b){8}$");
  expect(pattern.test("ab".repeat(1000))).toBe(false);
  expect(pattern.dfaMemory).toBe(65_536);
});
