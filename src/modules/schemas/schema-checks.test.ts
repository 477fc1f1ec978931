import { describe, expect, test } from "bun:test";
import { checkSchema, MAX_SCHEMA_DEPTH, schemaId } from "./message-schema.ts";
import { canonicalJson } from "../../lib/canonical-json.ts";

const paths = (schema: unknown) => checkSchema(schema).map((error) => error.path);

describe("checkSchema", () => {
  test("accepts every directive with every optional key", () => {
    const schema = {
      o: {
        type: "object",
        required: false,
        strict: false,
        props: { a: { type: "array", required: true, items: { type: "number", min: null, max: 3 } } },
      },
      s: { type: "string", pattern: "^x", enum: ["x", "xy"], min: 0, max: 2, required: true },
      n: { type: "number", min: -1.5, max: -1.5 },
      t: { type: "string", pattern: null, enum: null, min: null, max: null },
    };
    expect(checkSchema(schema)).toEqual([]);
  });

  test("refuses a schema that is not an object", () => {
    for (const schema of [null, undefined, "x", 1, [{ a: { type: "string" } }]]) {
      expect(paths(schema)).toEqual([""]);
    }
  });

  test("refuses an empty top level", () => {
    expect(checkSchema({})).toEqual([{ path: "", message: "must declare at least one property" }]);
  });

  test("refuses a directive that is not an object, or has a missing or unknown type", () => {
    expect(paths({ a: "string", b: null, c: {}, d: { type: "boolean" }, e: { type: 1 } })).toEqual([
      "/a",
      "/b",
      "/c/type",
      "/d/type",
      "/e/type",
    ]);
    expect(checkSchema({ d: { type: "boolean" } })[0]!.message).toContain('unknown type "boolean"');
  });

  test("refuses an object without props, with empty props, or with props of the wrong type", () => {
    expect(checkSchema({ a: { type: "object" } })).toEqual([
      { path: "/a/props", message: "is required for type object" },
    ]);
    expect(checkSchema({ a: { type: "object", props: {} } })).toEqual([
      { path: "/a/props", message: "must declare at least one property" },
    ]);
    expect(paths({ a: { type: "object", props: [] } })).toEqual(["/a/props"]);
  });

  test("refuses an array without items and checks items recursively", () => {
    expect(checkSchema({ a: { type: "array" } })).toEqual([{ path: "/a/items", message: "is required for type array" }]);
    expect(paths({ a: { type: "array", items: { type: "date" } } })).toEqual(["/a/items/type"]);
  });

  test("refuses a pattern that does not compile, or is not a string", () => {
    const errors = checkSchema({ a: { type: "object", props: { email: { type: "string", pattern: "([a-z" } } } });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe("/a/props/email/pattern");
    expect(errors[0]!.message).toStartWith("is not a valid regular expression");
    expect(paths({ a: { type: "string", pattern: 5 } })).toEqual(["/a/pattern"]);
  });

  test("refuses min above max for strings and numbers", () => {
    expect(checkSchema({ s: { type: "string", min: 5, max: 4 }, n: { type: "number", min: 1, max: 0.5 } })).toEqual([
      { path: "/s/min", message: "must not exceed max (4)" },
      { path: "/n/min", message: "must not exceed max (0.5)" },
    ]);
  });

  test("refuses negative or fractional string lengths and non-finite number bounds", () => {
    expect(paths({ s: { type: "string", min: -1, max: 1.5 } })).toEqual(["/s/min", "/s/max"]);
    expect(paths({ n: { type: "number", min: "1", max: Infinity } })).toEqual(["/n/min", "/n/max"]);
  });

  test("refuses an enum that is not a non-empty array of strings", () => {
    expect(paths({ a: { type: "string", enum: "gold" } })).toEqual(["/a/enum"]);
    expect(paths({ a: { type: "string", enum: [] } })).toEqual(["/a/enum"]);
    expect(paths({ a: { type: "string", enum: ["gold", 1, null] } })).toEqual(["/a/enum/1", "/a/enum/2"]);
  });

  test("refuses unknown directive keys, including keys of another type", () => {
    expect(paths({ a: { type: "number", pattern: "x", format: "int" } })).toEqual(["/a/pattern", "/a/format"]);
    expect(paths({ a: { type: "array", items: { type: "string" }, strict: true } })).toEqual(["/a/strict"]);
  });

  test("refuses required and strict that are not booleans", () => {
    expect(paths({ a: { type: "object", required: "no", strict: 0, props: { b: { type: "number" } } } })).toEqual([
      "/a/required",
      "/a/strict",
    ]);
  });

  test("reports every problem at once, at nested paths", () => {
    const schema = {
      a: { type: "object", props: { b: { type: "array", items: { type: "string", min: 3, max: 1 } } } },
      c: { type: "uuid" },
      d: { type: "object" },
    };
    expect(paths(schema)).toEqual(["/a/props/b/items/min", "/c/type", "/d/props"]);
  });

  test("refuses nesting deeper than the limit", () => {
    let directive: unknown = { type: "number" };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) directive = { type: "array", items: directive };
    expect(paths({ a: directive })).toHaveLength(1);
    expect(checkSchema({ a: (directive as { items: unknown }).items })).toEqual([]);
  });
});

describe("canonicalJson and schemaId", () => {
  test("sort keys at every level and drop whitespace", () => {
    const value = { b: [{ z: 1, a: null }, "s"], a: { d: true, c: "x y" } };
    expect(canonicalJson(value)).toBe('{"a":{"c":"x y","d":true},"b":[{"a":null,"z":1},"s"]}');
  });

  test("sort integer-like keys as strings, as JSON.stringify would not", () => {
    expect(canonicalJson({ "10": 1, "9": 2, a: 3 })).toBe('{"10":1,"9":2,"a":3}');
  });

  test("do not depend on key order", () => {
    const one = { n: { type: "number", min: 1 }, s: { type: "string", max: 2 } } as const;
    const two = { s: { max: 2, type: "string" }, n: { min: 1, type: "number" } } as const;
    expect(canonicalJson(one)).toBe(canonicalJson(two));
    expect(schemaId(one)).toBe(schemaId(two));
  });

  test("schemaId is the hex SHA-256 of the canonical JSON", () => {
    const schema = { a: { type: "string" } } as const;
    const id = schemaId(schema);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(id).toBe(new Bun.CryptoHasher("sha256").update('{"a":{"type":"string"}}').digest("hex"));
    expect(schemaId({ a: { type: "number" } })).not.toBe(id);
  });
});
