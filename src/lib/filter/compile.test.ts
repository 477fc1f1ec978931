import { describe, expect, test } from "bun:test";
import { canonicalFilter, compileFilter } from "./compile.ts";
import { FILTER_LIMITS, MAX_FILTER_ERRORS } from "./limits.ts";
import type { FieldError } from "../errors.ts";

const errorsOf = (filter: unknown, base?: string): FieldError[] => {
  const result = compileFilter(filter, base);
  return result.ok ? [] : result.errors;
};
const pathsOf = (filter: unknown) => errorsOf(filter).map((error) => error.path);
const accepted = (filter: unknown) => expect({ filter, errors: errorsOf(filter) }).toEqual({ filter, errors: [] });

/** `{ a: { a: … } }` with `levels` objects, the innermost holding `leaf`. */
function nested(levels: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe("the filter object", () => {
  test("must be an object of names and data", () => {
    for (const filter of [null, undefined, 1, "order.*", [], [{ names: ["a"] }]]) {
      expect(errorsOf(filter)).toEqual([{ path: "/filter", message: "must be an object with names, data or both" }]);
    }
    expect(errorsOf({ name: ["a"], date: {} })).toEqual([
      { path: "/filter/name", message: "is not a known field" },
      { path: "/filter/date", message: "is not a known field" },
    ]);
  });

  test("paths start at the base the caller names", () => {
    expect(errorsOf({ names: [] }, "")).toEqual([{ path: "/names", message: "must be an array of 1 to 50 name patterns" }]);
    expect(errorsOf({ names: [] }, "/listener/filter")[0]!.path).toBe("/listener/filter/names");
  });

  test("a value that is not JSON is refused, not thrown", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(errorsOf(cycle)).toEqual([{ path: "/filter", message: "must be a JSON value" }]);
    expect(errorsOf({ data: { a: 10n } })).toEqual([{ path: "/filter", message: "must be a JSON value" }]);
  });
});

describe("names", () => {
  test("1 to 50 patterns of 1 to 200 characters", () => {
    accepted({ names: ["a"] });
    accepted({ names: Array.from({ length: 50 }, (_, i) => `e${i}.*`) });
    accepted({ names: ["x".repeat(200)] });
    accepted({ names: ["😀".repeat(200)] });
    expect(errorsOf({ names: [] })).toEqual([{ path: "/filter/names", message: "must be an array of 1 to 50 name patterns" }]);
    expect(pathsOf({ names: Array.from({ length: 51 }, () => "a") })).toEqual(["/filter/names"]);
    expect(pathsOf({ names: "order.*" })).toEqual(["/filter/names"]);
    expect(errorsOf({ names: ["ok", "", "x".repeat(201), 5, null, "😀".repeat(201)] })).toEqual(
      [1, 2, 3, 4, 5].map((i) => ({ path: `/filter/names/${i}`, message: "must be a string of 1 to 200 characters" })),
    );
  });
});

describe("data", () => {
  test("must be an object of conditions", () => {
    for (const data of [1, "a", [], [{ a: 1 }], true]) {
      expect(errorsOf({ data })).toEqual([{ path: "/filter/data", message: "must be an object of conditions (dot paths, $and, $or, $not)" }]);
    }
  });

  test("dot paths: no empty segment, at most 10 segments", () => {
    accepted({ data: { "a.b.c.d.e.f.g.h.i.j": 1 } });
    expect(errorsOf({ data: { "a.b.c.d.e.f.g.h.i.j.k": 1 } })).toEqual([
      { path: "/filter/data/a.b.c.d.e.f.g.h.i.j.k", message: "is a path of 11 segments; at most 10" },
    ]);
    for (const key of ["", ".", "a.", ".a", "a..b"]) {
      expect(errorsOf({ data: { [key]: 1 } })).toEqual([{ path: `/filter/data/${key}`, message: "is not a dot path: a segment is empty" }]);
    }
  });

  test("a key is escaped in the error's path", () => {
    expect(pathsOf({ data: { "a/b~c": { $bad: 1 } } })).toEqual(["/filter/data/a~1b~0c/$bad"]);
  });

  test("an object value mixing operators and plain keys is refused, naming both", () => {
    const errors = errorsOf({ data: { total: { $gte: 100, currency: "EUR" } } });
    expect(errors.map((e) => e.path)).toEqual(["/filter/data/total"]);
    expect(errors[0]!.message).toContain("mixes operators ($gte) with plain keys (currency)");
  });

  test("unknown operators and combinators are refused by name", () => {
    expect(errorsOf({ data: { a: { $regex: "^x" }, b: { $size: 1, $gt: 1 } } }).map((e) => e.path)).toEqual(["/filter/data/a/$regex", "/filter/data/b/$size"]);
    expect(errorsOf({ data: { a: { $regex: "x" } } })[0]!.message).toContain("is not an operator; the operators are $eq, $ne");
    expect(errorsOf({ data: { a: { $not: { $eq: 1 } } } })[0]).toEqual({
      path: "/filter/data/a/$not",
      message: 'is not an operator: $not combines condition objects, as in {"$not": {"a": 1}}',
    });
    expect(errorsOf({ data: { $nor: [{ a: 1 }] } })[0]).toEqual({ path: "/filter/data/$nor", message: "is not a combinator: condition objects combine with $and, $or and $not" });
    expect(errorsOf({ data: { $gt: 5 } })[0]!.message).toContain(`operators go in a path's value, as in {"total": {"$gt": …}}`);
  });

  test("combinators take non-empty arrays of condition objects, or one object for $not", () => {
    for (const value of [[], {}, [1][0], "x", null]) {
      expect(errorsOf({ data: { $or: value } })).toEqual([{ path: "/filter/data/$or", message: "must be a non-empty array of condition objects" }]);
    }
    expect(errorsOf({ data: { $and: [{ a: 1 }, [], 3] } }).map((e) => e.path)).toEqual(["/filter/data/$and/1", "/filter/data/$and/2"]);
    expect(pathsOf({ data: { $not: [{ a: 1 }] } })).toEqual(["/filter/data/$not"]);
    expect(pathsOf({ data: { $not: null } })).toEqual(["/filter/data/$not"]);
  });

  test("each operator's argument is checked", () => {
    accepted({ data: { a: { $eq: { x: [1] }, $ne: null, $gt: 1, $gte: "a", $lt: -1.5, $lte: "", $in: [1, "a", null, [1], {}], $nin: [], $exists: false, $prefix: "", $contains: { y: 1 } } } });
    const errors = errorsOf({ data: { a: { $gt: true, $gte: null, $lt: [1], $lte: {}, $in: "a", $nin: { x: 1 }, $exists: "yes", $prefix: 1 } } });
    expect(errors).toEqual([
      { path: "/filter/data/a/$gt", message: "must be a number or a string" },
      { path: "/filter/data/a/$gte", message: "must be a number or a string" },
      { path: "/filter/data/a/$lt", message: "must be a number or a string" },
      { path: "/filter/data/a/$lte", message: "must be a number or a string" },
      { path: "/filter/data/a/$in", message: "must be an array of at most 100 values" },
      { path: "/filter/data/a/$nin", message: "must be an array of at most 100 values" },
      { path: "/filter/data/a/$exists", message: "must be true or false" },
      { path: "/filter/data/a/$prefix", message: "must be a string" },
    ]);
  });

  test("$in and $nin hold at most 100 values", () => {
    const values = Array.from({ length: 100 }, (_, i) => i);
    accepted({ data: { a: { $in: values }, b: { $nin: values } } });
    expect(pathsOf({ data: { a: { $in: [...values, 100] } } })).toEqual(["/filter/data/a/$in"]);
    expect(pathsOf({ data: { a: { $nin: [...values, 100] } } })).toEqual(["/filter/data/a/$nin"]);
  });

  test("every problem is reported, each at its own path", () => {
    const filter = {
      names: ["", "ok"],
      extra: 1,
      data: { "": 1, "a..b": { $gt: 1 }, c: { $gt: [] }, $or: [{ d: { $gte: 1, e: 2 } }, { f: { $in: [1], $x: 1 } }], $not: { g: { $exists: 1 } } },
    };
    expect(pathsOf(filter)).toEqual([
      "/filter/extra",
      "/filter/names/0",
      "/filter/data/",
      "/filter/data/a..b",
      "/filter/data/c/$gt",
      "/filter/data/$or/0/d",
      "/filter/data/$or/1/f/$x",
      "/filter/data/$not/g/$exists",
    ]);
  });

  test("errors stop at 20, whatever was sent", () => {
    const data = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, { $bad: 1 }]));
    expect(errorsOf({ data })).toHaveLength(MAX_FILTER_ERRORS);
  });
});

describe("limits", () => {
  test("8 KB serialized", () => {
    const overhead = JSON.stringify({ data: { a: "" } }).length;
    accepted({ data: { a: "x".repeat(FILTER_LIMITS.bytes - overhead) } });
    expect(errorsOf({ data: { a: "x".repeat(FILTER_LIMITS.bytes - overhead + 1) } })).toEqual([
      { path: "/filter", message: "is 8193 bytes serialized; at most 8192" },
    ]);
    // Bytes of UTF-8, not characters: é takes two.
    expect(pathsOf({ data: { a: "é".repeat((FILTER_LIMITS.bytes - overhead) / 2 + 1) } })).toEqual(["/filter"]);
  });

  test("200 nodes: name patterns, keys and operators; the first past the limit is named", () => {
    const names = Array.from({ length: 50 }, (_, i) => `n${i}`);
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 1]));
    accepted({ names, data: keys(150) });
    expect(errorsOf({ names, data: keys(151) })).toEqual([
      { path: "/filter/data/k150", message: "takes the filter past 200 conditions (name patterns, keys and operators count one each)" },
    ]);
    const operators = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, { $gte: 0, $lt: 9 }]));
    accepted({ data: { ...operators(66), x: 1, y: 2 } }); // 66 × 3 + 2 = 200
    expect(pathsOf({ data: { ...operators(66), last: { $ne: 1, $gt: 0 } } })).toEqual(["/filter/data/last/$gt"]); // 201
    // A combinator's key counts, its members' keys count; $in's values do not.
    accepted({ data: { a: { $in: Array.from({ length: 100 }, (_, i) => i) }, b: { $nin: Array.from({ length: 100 }, (_, i) => i) } } });
  });

  test("8 levels of objects and arrays, data itself being the first", () => {
    accepted({ data: nested(8, 1) });
    expect(errorsOf({ data: nested(9, 1) })).toEqual([
      { path: "/filter/data/a/a/a/a/a/a/a/a", message: "nests deeper than 8 levels of objects and arrays (counting data itself as 1)" },
    ]);
    // data 1, $and 2, member 3, $or 4, member 5, $not 6, operators 7, $in 8.
    accepted({ data: { $and: [{ $or: [{ $not: { a: { $in: [1] } } }] }] } });
    expect(pathsOf({ data: { $and: [{ $or: [{ $not: { a: { $in: [[1]] } } }] }] } })).toEqual(["/filter/data/$and/0/$or/0/$not/a/$in/0"]);
    expect(pathsOf({ data: { $not: { $not: { $not: { $not: { $not: { $not: { $not: { $not: {} } } } } } } } } })).toEqual([
      "/filter/data/$not/$not/$not/$not/$not/$not/$not/$not",
    ]);
    expect(pathsOf({ data: { a: { $eq: nested(7, 1) } } })).toEqual(["/filter/data/a/$eq/a/a/a/a/a/a"]);
    accepted({ data: { a: { $eq: nested(6, 1) } } });
    expect(pathsOf({ data: { a: [[[[[[[[1]]]]]]]] } })).toEqual(["/filter/data/a/0/0/0/0/0/0/0"]);
    accepted({ data: { a: [[[[[[[1]]]]]]] } });
  });
});

describe("the saved form", () => {
  test("is the input as validated, parts given as null left out", () => {
    const filter = { names: ["order.*"], data: { "customer.tier": "gold", total: { $gte: 100 } } };
    const result = compileFilter(filter);
    expect(result.ok && canonicalFilter(result.filter)).toEqual(filter);
    const partial = compileFilter({ names: null, data: { a: 1 } });
    expect(partial.ok && canonicalFilter(partial.filter)).toEqual({ data: { a: 1 } });
  });

  test("is a copy: changing the input afterwards changes nothing", () => {
    const filter = { names: ["a"], data: { a: [1] } };
    const result = compileFilter(filter);
    filter.names.push("b");
    filter.data.a.push(2);
    expect(result.ok && canonicalFilter(result.filter)).toEqual({ names: ["a"], data: { a: [1] } });
  });

  test("keeps a key named __proto__ as a key", () => {
    const text = '{"data":{"__proto__":{"$eq":1},"a":{"__proto__":2}}}';
    const result = compileFilter(JSON.parse(text));
    expect(result.ok && JSON.stringify(canonicalFilter(result.filter))).toBe(text);
  });

  test("compiles again from its JSON to the same spec", () => {
    const filter = { names: ["*"], data: { $or: [{ "a.0": { $in: [1, [2], { b: null }] } }, { $not: { c: { $contains: "x" } } }] } };
    const first = compileFilter(filter);
    if (!first.ok) throw new Error("refused");
    const again = compileFilter(JSON.parse(JSON.stringify(canonicalFilter(first.filter))));
    expect(again.ok && canonicalFilter(again.filter)).toEqual(canonicalFilter(first.filter));
  });
});
