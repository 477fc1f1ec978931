import { describe, expect, test } from "bun:test";
import { compileFilter, filterSubject, matches, type CompiledFilter } from "./filter.ts";

function compiled(filter: unknown): CompiledFilter {
  const result = compileFilter(filter);
  if (!result.ok) throw new Error(`refused: ${JSON.stringify(result.errors)}`);
  return result.filter;
}

/** Whether a message with `data` (and `name`) passes a filter of `data` conditions alone. */
const dataMatches = (conditions: object, data: unknown, name: string | null = "n") => matches(compiled({ data: conditions }), { name, data });

/** The cases of one condition over several documents, in one assertion so a failure shows them all. */
function expectTable(conditions: object, cases: [unknown, boolean][]) {
  const got = cases.map(([data]) => [data, dataMatches(conditions, data)]);
  expect({ conditions, got }).toEqual({ conditions, got: cases });
}

describe("the two parts", () => {
  test("no part, or parts given as null, pass every message", () => {
    for (const filter of [{}, { names: null }, { data: null }, { names: null, data: null }]) {
      expect(matches(compiled(filter), { name: null, data: 7 })).toBe(true);
      expect(matches(compiled(filter), { name: "a", data: { x: 1 } })).toBe(true);
    }
  });

  test("names: any pattern may match; a message without a name matches none, not even *", () => {
    const filter = compiled({ names: ["order.*", "invoice.paid"] });
    expect(matches(filter, { name: "order.created", data: null })).toBe(true);
    expect(matches(filter, { name: "invoice.paid", data: null })).toBe(true);
    expect(matches(filter, { name: "invoice.sent", data: null })).toBe(false);
    expect(matches(filter, { name: null, data: null })).toBe(false);
    expect(matches(compiled({ names: ["*"] }), { name: null, data: null })).toBe(false);
  });

  test("a message must satisfy each part given", () => {
    const filter = compiled({ names: ["order.*"], data: { "customer.tier": "gold", total: { $gte: 100 } } });
    const gold = { customer: { tier: "gold" }, total: 150 };
    expect(matches(filter, { name: "order.created", data: gold })).toBe(true);
    expect(matches(filter, { name: "invoice.paid", data: gold })).toBe(false);
    expect(matches(filter, { name: "order.created", data: { ...gold, total: 99.5 } })).toBe(false);
    expect(matches(filter, { name: "order.created", data: { ...gold, customer: { tier: "Gold" } } })).toBe(false);
    expect(matches(filter, { name: null, data: gold })).toBe(false);
  });

  test("a data part with no conditions passes every message, whatever its data", () => {
    for (const data of [null, 1, "x", [], {}]) expect(dataMatches({}, data, null)).toBe(true);
  });
});

describe("paths", () => {
  test("dot paths read nested objects; a numeric segment indexes an array", () => {
    const data = { a: { b: [{ c: 1 }, { c: 2 }] }, list: [10, 20, 30], "0": "zero" };
    expectTable({ "a.b.1.c": 2 }, [[data, true]]);
    expectTable({ "list.0": 10, "list.2": 30 }, [[data, true]]);
    expectTable({ "0": "zero" }, [[data, true], [["zero"], true], [[], false]]);
    expectTable({ "list.3": { $exists: false } }, [[data, true]]);
    expectTable({ "0.x": 1 }, [[[{ x: 1 }], true], [{ "0": { x: 1 } }, true], [[{ x: 2 }], false]]);
  });

  test("through a scalar, past an array's end, or a non-index on an array, a path is missing", () => {
    const data = { s: "text", n: 5, nul: null, list: [1, 2] };
    for (const path of ["s.length", "s.0", "n.x", "nul.x", "list.2", "list.length", "list.01", "list.-1", "list.1.0", "list.1e0", "list. 1", "list.99999999999999999999", "nope"]) {
      expect({ path, exists: dataMatches({ [path]: { $exists: true } }, data) }).toEqual({ path, exists: false });
      expect({ path, missing: dataMatches({ [path]: { $exists: false } }, data) }).toEqual({ path, missing: true });
    }
  });

  test("only own properties are read: inherited names are missing", () => {
    for (const path of ["constructor", "toString", "__proto__", "a.hasOwnProperty"]) {
      expect({ path, exists: dataMatches({ [path]: { $exists: true } }, { a: {} }) }).toEqual({ path, exists: false });
    }
    // A key named __proto__, as JSON.parse makes it: an own property (an object literal would set the prototype).
    const proto = JSON.parse('{"__proto__": {"$eq": 1}}');
    expect(dataMatches(proto, JSON.parse('{"__proto__": 1}'))).toBe(true);
    expect(dataMatches(proto, {})).toBe(false);
    expect(dataMatches(JSON.parse('{"__proto__.__proto__": null}'), {})).toBe(false);
  });

  test("when the data is a scalar or null every path is missing", () => {
    for (const data of [null, 3, "a", true]) {
      expect(dataMatches({ a: { $exists: false } }, data)).toBe(true);
      expect(dataMatches({ a: { $ne: 1 } }, data)).toBe(true);
      expect(dataMatches({ a: null }, data)).toBe(false);
    }
  });
});

describe("literals and $eq", () => {
  test("equal as JSON values: same type and value", () => {
    expectTable({ v: 1 }, [[{ v: 1 }, true], [{ v: 1.0 }, true], [{ v: "1" }, false], [{ v: true }, false], [{ v: [1] }, false], [{ v: 1.5 }, false]]);
    expectTable({ v: "" }, [[{ v: "" }, true], [{ v: null }, false], [{ v: 0 }, false], [{ v: false }, false], [{}, false]]);
    expectTable({ v: false }, [[{ v: false }, true], [{ v: 0 }, false], [{ v: null }, false], [{}, false]]);
    expectTable({ v: 0 }, [[JSON.parse('{"v": -0}'), true], [JSON.parse('{"v": 0.0}'), true], [{ v: "0" }, false]]);
    expectTable({ v: "é" }, [[{ v: "é" }, true], [{ v: "e\u0301" }, false], [{ v: "É" }, false]]);
  });

  test("null matches a present null only, never a missing path", () => {
    expectTable({ v: null }, [[{ v: null }, true], [{}, false], [{ v: 0 }, false], [{ v: "null" }, false]]);
    expectTable({ v: { $eq: null } }, [[{ v: null }, true], [{}, false]]);
  });

  test("objects and arrays are compared whole; key order does not matter, array order does", () => {
    expectTable({ v: { a: 1, b: [1, 2] } }, [
      [{ v: { b: [1, 2], a: 1 } }, true],
      [{ v: { a: 1, b: [2, 1] } }, false],
      [{ v: { a: 1 } }, false],
      [{ v: { a: 1, b: [1, 2], c: 3 } }, false],
      [{ v: { a: 1, b: [1, 2, 3] } }, false],
      [{ v: { a: 1.0, b: [1, 2.0] } }, true],
      [{ v: [{ a: 1, b: [1, 2] }] }, false],
    ]);
    expectTable({ v: [] }, [[{ v: [] }, true], [{ v: {} }, false], [{ v: [null] }, false]]);
    expectTable({ v: {} }, [[{ v: {} }, true], [{ v: [] }, false], [{ v: { a: 1 } }, false], [{ v: null }, false]]);
    expectTable({ v: [[1, { x: null }]] }, [[{ v: [[1, { x: null }]] }, true], [{ v: [[1, {}]] }, false], [{ v: [[1, { y: null }]] }, false]]);
  });

  test("a literal object compared whole is not a nested condition", () => {
    expectTable({ customer: { tier: "gold" } }, [[{ customer: { tier: "gold" } }, true], [{ customer: { tier: "gold", id: 1 } }, false]]);
    expectTable({ "customer.tier": "gold" }, [[{ customer: { tier: "gold", id: 1 } }, true]]);
  });

  test("$eq compares any value whole, keys starting with $ included", () => {
    expectTable({ v: { $eq: { $gt: 1 } } }, [[{ v: { $gt: 1 } }, true], [{ v: 5 }, false]]);
    expectTable({ v: { $eq: [1, "a"] } }, [[{ v: [1, "a"] }, true], [{ v: ["a", 1] }, false], [{ v: 1 }, false]]);
  });
});

describe("$ne", () => {
  test("anything not equal matches, a missing path included", () => {
    expectTable({ v: { $ne: 1 } }, [[{ v: 2 }, true], [{ v: "1" }, true], [{ v: null }, true], [{}, true], [{ v: 1 }, false], [{ v: 1.0 }, false]]);
    expectTable({ v: { $ne: null } }, [[{ v: null }, false], [{}, true], [{ v: 0 }, true]]);
    expectTable({ v: { $ne: { a: [1] } } }, [[{ v: { a: [1] } }, false], [{ v: { a: [1], b: 1 } }, true]]);
  });
});

describe("$gt, $gte, $lt, $lte", () => {
  test("numbers with numbers", () => {
    expectTable({ v: { $gt: 1 } }, [[{ v: 2 }, true], [{ v: 1.0000001 }, true], [{ v: 1 }, false], [{ v: 0 }, false], [{ v: -5 }, false]]);
    expectTable({ v: { $gte: 1 } }, [[{ v: 1 }, true], [{ v: 1.0 }, true], [{ v: 0.999 }, false]]);
    expectTable({ v: { $lt: -1.5 } }, [[{ v: -2 }, true], [{ v: -1.5 }, false], [{ v: 0 }, false]]);
    expectTable({ v: { $lte: 0 } }, [[JSON.parse('{"v": -0}'), true], [{ v: 0 }, true], [{ v: 1e-300 }, false]]);
    expectTable({ v: { $gt: 1e308 } }, [[{ v: 1.7e308 }, true], [{ v: -1.7e308 }, false]]);
  });

  test("strings with strings, by code points rather than locale", () => {
    expectTable({ v: { $gt: "z" } }, [[{ v: "é" }, true], [{ v: "za" }, true], [{ v: "z" }, false], [{ v: "Z" }, false], [{ v: "" }, false]]);
    expectTable({ v: { $lt: "a" } }, [[{ v: "B" }, true], [{ v: "" }, true], [{ v: "a" }, false], [{ v: "á" }, false]]);
    expectTable({ v: { $gte: "" } }, [[{ v: "" }, true], [{ v: "x" }, true], [{ v: 0 }, false]]);
    // U+FF61 precedes U+1F600 by code point; by UTF-16 units the emoji's surrogate (U+D83D) would come first.
    expectTable({ v: { $lt: "😀" } }, [[{ v: "｡" }, true], [{ v: "\uffff" }, true], [{ v: "😁" }, false]]);
    expectTable({ v: { $gt: "｡" } }, [[{ v: "😀" }, true]]);
    expectTable({ v: { $gte: "2026-01-01", $lt: "2026-02-01" } }, [[{ v: "2026-01-31T23:59:59Z" }, true], [{ v: "2026-02-01" }, false], [{ v: "2025-12-31" }, false]]);
  });

  test("another type never matches, in either direction", () => {
    for (const op of ["$gt", "$gte", "$lt", "$lte"]) {
      for (const v of ["5", true, false, null, [5], { a: 5 }]) expect({ op, v, got: dataMatches({ v: { [op]: 5 } }, { v }) }).toEqual({ op, v, got: false });
      for (const v of [5, true, null, ["a"], { a: "a" }]) expect({ op, v, got: dataMatches({ v: { [op]: "a" } }, { v }) }).toEqual({ op, v, got: false });
      expect(dataMatches({ v: { [op]: 5 } }, {})).toBe(false);
    }
  });
});

describe("$in and $nin", () => {
  test("$in: equal to one of the values, same type", () => {
    expectTable({ v: { $in: [1, "a", null, [1, 2], { k: true }] } }, [
      [{ v: 1 }, true], [{ v: 1.0 }, true], [{ v: "a" }, true], [{ v: null }, true], [{ v: [1, 2] }, true], [{ v: { k: true } }, true],
      [{ v: "1" }, false], [{ v: true }, false], [{ v: [2, 1] }, false], [{ v: { k: true, j: 1 } }, false], [{ v: [1] }, false], [{}, false],
    ]);
    expectTable({ v: { $in: [] } }, [[{ v: 1 }, false], [{}, false]]);
    expectTable({ v: { $in: [false, 0, ""] } }, [[{ v: false }, true], [{ v: 0 }, true], [{ v: "" }, true], [{ v: null }, false]]);
  });

  test("$nin: equal to none of them; a missing path matches", () => {
    expectTable({ v: { $nin: [1, "a", [1]] } }, [[{ v: 2 }, true], [{ v: "1" }, true], [{}, true], [{ v: null }, true], [{ v: 1 }, false], [{ v: [1] }, false], [{ v: "a" }, false]]);
    expectTable({ v: { $nin: [] } }, [[{ v: 1 }, true], [{}, true]]);
  });
});

describe("$exists", () => {
  test("a present null exists; a missing path does not", () => {
    expectTable({ v: { $exists: true } }, [[{ v: null }, true], [{ v: false }, true], [{ v: "" }, true], [{}, false], [{ w: 1 }, false]]);
    expectTable({ v: { $exists: false } }, [[{}, true], [{ v: null }, false], [{ v: 0 }, false]]);
  });
});

describe("$prefix", () => {
  test("a string that starts with the prefix; anything else never matches", () => {
    expectTable({ v: { $prefix: "ord_" } }, [[{ v: "ord_1" }, true], [{ v: "ord_" }, true], [{ v: "ORD_1" }, false], [{ v: "xord_" }, false], [{ v: ["ord_1"] }, false], [{}, false], [{ v: null }, false]]);
    expectTable({ v: { $prefix: "" } }, [[{ v: "" }, true], [{ v: "x" }, true], [{ v: 1 }, false], [{}, false]]);
    expectTable({ v: { $prefix: "é" } }, [[{ v: "été" }, true], [{ v: "ete" }, false]]);
  });
});

describe("$contains", () => {
  test("an array holding an equal element", () => {
    expectTable({ tags: { $contains: "vip" } }, [[{ tags: ["new", "vip"] }, true], [{ tags: ["VIP"] }, false], [{ tags: [] }, false], [{ tags: [["vip"]] }, false], [{}, false]]);
    expectTable({ items: { $contains: { sku: "a", n: 1 } } }, [[{ items: [{ n: 1, sku: "a" }] }, true], [{ items: [{ sku: "a", n: 1, x: 0 }] }, false]]);
    expectTable({ n: { $contains: 1 } }, [[{ n: [1.0, 2] }, true], [{ n: ["1"] }, false], [{ n: 1 }, false]]);
    expectTable({ n: { $contains: null } }, [[{ n: [null] }, true], [{ n: [] }, false]]);
  });

  test("a string holding a substring", () => {
    expectTable({ s: { $contains: "paid" } }, [[{ s: "unpaid" }, true], [{ s: "paid" }, true], [{ s: "PAID" }, false], [{ s: "pai" }, false], [{ s: ["unpaid"] }, false]]);
    expectTable({ s: { $contains: "" } }, [[{ s: "" }, true], [{ s: "x" }, true], [{ s: 1 }, false]]);
    expectTable({ s: { $contains: 1 } }, [[{ s: "1" }, false]]);
    expectTable({ s: { $contains: "😀" } }, [[{ s: "a😀b" }, true]]);
  });
});

describe("operator objects", () => {
  test("every operator of an object must hold", () => {
    expectTable({ v: { $gte: 10, $lt: 20, $ne: 15 } }, [[{ v: 10 }, true], [{ v: 19.9 }, true], [{ v: 15 }, false], [{ v: 20 }, false], [{}, false]]);
    expectTable({ v: { $ne: 1, $exists: true } }, [[{}, false], [{ v: 2 }, true]]);
  });

  test("a missing path matches only $exists: false, $ne and $nin", () => {
    const matching = [{ $exists: false }, { $ne: 1 }, { $nin: [1] }, { $ne: null }, { $nin: [] }];
    const failing = [{ $exists: true }, { $eq: null }, { $gt: 0 }, { $gte: "" }, { $lt: 0 }, { $lte: "z" }, { $in: [null] }, { $prefix: "" }, { $contains: "" }, {}, null, 0];
    for (const value of matching) expect({ value, got: dataMatches({ v: value }, { w: 1 }) }).toEqual({ value, got: true });
    for (const value of failing) expect({ value, got: dataMatches({ v: value }, { w: 1 }) }).toEqual({ value, got: false });
  });
});

describe("combinators", () => {
  test("all keys of an object must hold", () => {
    expectTable({ a: 1, b: 2 }, [[{ a: 1, b: 2 }, true], [{ a: 1, b: 3 }, false], [{ a: 1 }, false]]);
  });

  test("$and: all; $or: any; $not: negates one object", () => {
    expectTable({ $and: [{ a: 1 }, { b: 2 }] }, [[{ a: 1, b: 2 }, true], [{ a: 1 }, false]]);
    expectTable({ $or: [{ a: 1 }, { b: 2 }] }, [[{ a: 1 }, true], [{ b: 2 }, true], [{ a: 2, b: 1 }, false], [{}, false]]);
    expectTable({ $not: { a: 1, b: 2 } }, [[{ a: 1, b: 2 }, false], [{ a: 1 }, true], [{}, true]]);
    expectTable({ $not: {} }, [[{}, false], [{ a: 1 }, false]]);
    expectTable({ $or: [{}] }, [[null, true]]);
  });

  test("combinators nest and mix with paths", () => {
    const conditions = {
      kind: "order",
      $or: [{ total: { $gte: 100 } }, { $and: [{ "customer.tier": "gold" }, { $not: { "customer.blocked": true } }] }],
    };
    expectTable(conditions, [
      [{ kind: "order", total: 150 }, true],
      [{ kind: "order", total: 50, customer: { tier: "gold" } }, true],
      [{ kind: "order", total: 50, customer: { tier: "gold", blocked: true } }, false],
      [{ kind: "refund", total: 150 }, false],
      [{ kind: "order", total: 50 }, false],
    ]);
  });
});

describe("filterSubject", () => {
  test("parses the stored data once", () => {
    expect(filterSubject("a", '{"x":[1,{"y":null}]}')).toEqual({ name: "a", data: { x: [1, { y: null }] } });
    expect(filterSubject(null, "null")).toEqual({ name: null, data: null });
    expect(filterSubject(null, "12")).toEqual({ name: null, data: 12 });
  });

  test("data sent as a string holding JSON is matched parsed, as schemas check it", () => {
    const text = JSON.stringify(JSON.stringify({ customer: { tier: "gold" }, total: 120 }));
    const subject = filterSubject("order.created", text);
    expect(subject.data).toEqual({ customer: { tier: "gold" }, total: 120 });
    expect(matches(compiled({ data: { "customer.tier": "gold", total: { $gte: 100 } } }), subject)).toBe(true);
    expect(filterSubject(null, JSON.stringify("[1,2]")).data).toEqual([1, 2]);
    expect(filterSubject(null, JSON.stringify("7")).data).toBe(7);
    expect(filterSubject(null, JSON.stringify('"inner"')).data).toBe("inner");
  });

  test("a string holding no JSON is matched as the string", () => {
    for (const text of ["hello", "", "{not json", "[1,", "nul"]) expect(filterSubject(null, JSON.stringify(text)).data).toBe(text);
    expect(matches(compiled({ data: { "0": { $exists: true } } }), filterSubject(null, JSON.stringify("hello")))).toBe(false);
  });

  test("a string holding JSON nested deeper than a request may be is matched as the string", () => {
    const deep = "[".repeat(65) + "]".repeat(65);
    expect(filterSubject(null, JSON.stringify(deep)).data).toBe(deep);
    const allowed = "[".repeat(64) + "]".repeat(64);
    expect(Array.isArray(filterSubject(null, JSON.stringify(allowed)).data)).toBe(true);
  });
});
