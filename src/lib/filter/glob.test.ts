import { describe, expect, test } from "bun:test";
import { compileGlob } from "./glob.ts";
import { compileNeedle, indexOfNeedle, type Meter } from "./text-search.ts";

const globMatches = (pattern: string, name: string) => compileGlob(pattern).test(name);

describe("name patterns", () => {
  test("without a star a pattern is the whole name, case-sensitive", () => {
    expect(globMatches("invoice.paid", "invoice.paid")).toBe(true);
    expect(globMatches("invoice.paid", "invoice.paid.x")).toBe(false);
    expect(globMatches("invoice.paid", "x.invoice.paid")).toBe(false);
    expect(globMatches("invoice.paid", "Invoice.paid")).toBe(false);
  });

  test("a star at the end, the start or in the middle matches any run, dots included, or none", () => {
    expect(globMatches("order.*", "order.created")).toBe(true);
    expect(globMatches("order.*", "order.line.added")).toBe(true);
    expect(globMatches("order.*", "order.")).toBe(true);
    expect(globMatches("order.*", "order")).toBe(false);
    expect(globMatches("order.*", "orders.created")).toBe(false);
    expect(globMatches("*.paid", "invoice.paid")).toBe(true);
    expect(globMatches("*.paid", "a.b.paid")).toBe(true);
    expect(globMatches("*.paid", "invoice.paid.late")).toBe(false);
    expect(globMatches("order.*.done", "order.x.y.done")).toBe(true);
    expect(globMatches("order.*.done", "order.done")).toBe(false);
    expect(globMatches("order.*.done", "order..done")).toBe(true);
    expect(globMatches("*paid*", "unpaid-invoice")).toBe(true);
    expect(globMatches("*paid*", "PAID")).toBe(false);
  });

  test("a star alone, or several in a row, match every name", () => {
    for (const pattern of ["*", "**", "***"]) {
      for (const name of ["a", "order.created", "é😀", " "]) expect({ pattern, name, ok: globMatches(pattern, name) }).toEqual({ pattern, name, ok: true });
    }
    expect(globMatches("a**b", "ab")).toBe(true);
    expect(globMatches("a**b", "a.x.b")).toBe(true);
    expect(globMatches("a**b", "a.x.c")).toBe(false);
  });

  test("the first and last pieces may not overlap", () => {
    expect(globMatches("a*a", "a")).toBe(false);
    expect(globMatches("a*a", "aa")).toBe(true);
    expect(globMatches("ab*bc", "abc")).toBe(false);
    expect(globMatches("ab*bc", "abbc")).toBe(true);
    expect(globMatches("a*b*c", "abc")).toBe(true);
    expect(globMatches("a*b*c", "acb")).toBe(false);
    expect(globMatches("a*bc*bc", "abcbc")).toBe(true);
    expect(globMatches("a*bc*bc", "abcb")).toBe(false);
  });

  test("the middle pieces are found in order, each after the last", () => {
    expect(globMatches("*a*b*c*", "xxaxxbxxcxx")).toBe(true);
    expect(globMatches("*a*b*c*", "xxcxxbxxaxx")).toBe(false);
    expect(globMatches("*aab*", "aaab")).toBe(true);
    expect(globMatches("*abab*c", "ababac.ababc")).toBe(true);
    expect(globMatches("*ab*ba*", "aba")).toBe(false);
    expect(globMatches("*ab*ba*", "abba")).toBe(true);
  });

  test("regular expression characters are literal", () => {
    expect(globMatches("a.b", "axb")).toBe(false);
    expect(globMatches("a+b", "a+b")).toBe(true);
    expect(globMatches("a+b", "aab")).toBe(false);
    expect(globMatches("(x|y)?", "(x|y)?")).toBe(true);
    expect(globMatches("(x|y)?", "x")).toBe(false);
    expect(globMatches("[a-z]*", "[a-z]")).toBe(true);
    expect(globMatches("[a-z]*", "b")).toBe(false);
    expect(globMatches("^a$", "^a$")).toBe(true);
    expect(globMatches("\\d*", "\\d1")).toBe(true);
    expect(globMatches("\\d*", "1")).toBe(false);
    expect(globMatches("?", "a")).toBe(false);
  });

  test("non-ASCII characters match themselves", () => {
    expect(globMatches("café.*", "café.ouvert")).toBe(true);
    expect(globMatches("café.*", "cafe.ouvert")).toBe(false);
    expect(globMatches("*😀", "ok😀")).toBe(true);
  });
});

describe("linear time, counted rather than timed", () => {
  test("a pattern of many stars against a long name that almost matches", () => {
    const pattern = "*" + "a*".repeat(99) + "b*";
    const name = "a".repeat(10_000);
    const meter: Meter = { steps: 0 };
    expect(compileGlob(pattern).test(name, meter)).toBe(false);
    // A backtracking matcher tries a number of splits exponential in the stars; this one reads the name once.
    expect(meter.steps).toBeGreaterThanOrEqual(name.length);
    expect(meter.steps).toBeLessThanOrEqual(2 * (name.length + pattern.length));
    expect(compileGlob(pattern).test(name + "b")).toBe(true);
  });

  test("a middle piece that nearly occurs everywhere is searched in linear time", () => {
    const piece = "a".repeat(999) + "b";
    const name = "x" + "a".repeat(100_000) + "x";
    const meter: Meter = { steps: 0 };
    expect(compileGlob(`x*${piece}*x`).test(name, meter)).toBe(false);
    expect(meter.steps).toBeLessThanOrEqual(3 * (name.length + piece.length));
  });

  test("substring search finds the first whole occurrence inside its window", () => {
    const needle = compileNeedle("abab");
    expect(indexOfNeedle("xxababab", needle, 0, 8)).toBe(2);
    expect(indexOfNeedle("xxababab", needle, 3, 8)).toBe(4);
    expect(indexOfNeedle("xxababab", needle, 0, 5)).toBe(-1);
    expect(indexOfNeedle("aabaabaaab", compileNeedle("aaab"), 0, 10)).toBe(6);
    expect(indexOfNeedle("abc", compileNeedle(""), 1, 3)).toBe(1);
  });
});
