import { describe, expect, test } from "bun:test";
import {
  checkerFor,
  schemaId,
  validateData,
  type FieldError,
  type QueueMessageSchema,
} from "./message-schema.ts";

const orderSchema: QueueMessageSchema = {
  orderId: { type: "string", pattern: "^ord_[0-9]+$" },
  total: { type: "number", min: 0, max: 1000 },
  customer: {
    type: "object",
    props: {
      email: { type: "string", pattern: "@", min: 3, max: 20 },
      tier: { type: "string", enum: ["gold", "silver"], required: false },
    },
  },
  lines: {
    type: "array",
    items: { type: "object", props: { sku: { type: "string" }, qty: { type: "number", min: 1 } } },
  },
  note: { type: "string", required: false },
  meta: { type: "object", strict: false, required: false, props: { source: { type: "string" } } },
};
const orderId = schemaId(orderSchema);

const validOrder = {
  orderId: "ord_42",
  total: 99.5,
  customer: { email: "a@b.example", tier: "gold" },
  lines: [{ sku: "X1", qty: 2 }],
};

function errorsOf(schema: QueueMessageSchema, data: unknown): FieldError[] {
  const result = validateData(schema, schemaId(schema), data);
  if (result.ok) throw new Error("expected the data to be refused");
  return result.errors;
}

const paths = (errors: FieldError[]) => errors.map((error) => error.path).sort();

describe("validateData", () => {
  test("accepts conforming data and returns it", () => {
    expect(validateData(orderSchema, orderId, validOrder)).toEqual({ ok: true, value: validOrder });
  });

  test("parses JSON held in a string and returns the parsed value", () => {
    expect(validateData(orderSchema, orderId, JSON.stringify(validOrder))).toEqual({ ok: true, value: validOrder });
  });

  test("checks the parsed value of a JSON string, not the string", () => {
    const errors = errorsOf(orderSchema, JSON.stringify({ ...validOrder, total: -1 }));
    expect(errors).toEqual([{ path: "/total", message: "must be at least 0" }]);
  });

  test("refuses a string that is not JSON with one root error", () => {
    expect(errorsOf(orderSchema, "{orderId: ord_1")).toEqual([{ path: "", message: "data must be JSON" }]);
  });

  test("refuses null, a missing body and non-object top levels at the root", () => {
    expect(errorsOf(orderSchema, null)).toEqual([{ path: "", message: "is required" }]);
    expect(errorsOf(orderSchema, undefined)).toEqual([{ path: "", message: "is required" }]);
    expect(errorsOf(orderSchema, [validOrder])).toEqual([{ path: "", message: "must be an object" }]);
    expect(errorsOf(orderSchema, '"just text"')).toEqual([{ path: "", message: "must be an object" }]);
  });

  test("reports every failing path, nested in objects and arrays", () => {
    const data = {
      orderId: "ORD-1",
      total: 1001,
      customer: { email: "x", tier: "bronze", vip: true },
      lines: [{ sku: "A", qty: 1 }, { sku: 7, qty: 0 }, null],
      extra: 1,
    };
    expect(errorsOf(orderSchema, data)).toEqual([
      { path: "/orderId", message: "must match the pattern ^ord_[0-9]+$" },
      { path: "/total", message: "must be at most 1000" },
      { path: "/customer/email", message: "must have at least 3 characters" },
      { path: "/customer/email", message: "must match the pattern @" },
      { path: "/customer/tier", message: 'must be one of "gold", "silver"' },
      { path: "/customer/vip", message: "is not a declared property" },
      { path: "/lines/1/sku", message: "must be a string" },
      { path: "/lines/1/qty", message: "must be at least 1" },
      { path: "/lines/2", message: "is required" },
      { path: "/extra", message: "is not a declared property" },
    ]);
  });

  test("reports required properties that are missing or null", () => {
    const errors = errorsOf(orderSchema, { orderId: null, customer: {}, lines: [] });
    expect(paths(errors)).toEqual(["/customer/email", "/orderId", "/total"]);
    expect(errors.every((error) => error.message === "is required")).toBe(true);
  });

  test("required: false accepts null and absence but still checks a present value", () => {
    const base = { ...validOrder, note: null, meta: null };
    expect(validateData(orderSchema, orderId, base).ok).toBe(true);
    expect(errorsOf(orderSchema, { ...validOrder, note: 5 })).toEqual([{ path: "/note", message: "must be a string" }]);
  });

  test("strict: false allows undeclared properties but still checks declared ones", () => {
    expect(validateData(orderSchema, orderId, { ...validOrder, meta: { source: "web", other: 1 } }).ok).toBe(true);
    expect(errorsOf(orderSchema, { ...validOrder, meta: { other: 1 } })).toEqual([
      { path: "/meta/source", message: "is required" },
    ]);
  });

  test("inherited names do not count as present properties", () => {
    const schema = JSON.parse(`{"constructor":{"type":"string"}}`) as QueueMessageSchema;
    expect(errorsOf(schema, {})).toEqual([{ path: "/constructor", message: "is required" }]);
  });

  test("string min/max count code points, inclusively", () => {
    const schema: QueueMessageSchema = { s: { type: "string", min: 2, max: 3 } };
    const id = schemaId(schema);
    expect(validateData(schema, id, { s: "😀😀😀" }).ok).toBe(true);
    expect(validateData(schema, id, { s: "ab" }).ok).toBe(true);
    expect(errorsOf(schema, { s: "😀" })).toEqual([{ path: "/s", message: "must have at least 2 characters" }]);
    expect(errorsOf(schema, { s: "abcd" })).toEqual([{ path: "/s", message: "must have at most 3 characters" }]);
  });

  test("number min/max are inclusive and numbers must be finite numbers", () => {
    const schema: QueueMessageSchema = { n: { type: "number", min: 1, max: 2 } };
    const id = schemaId(schema);
    expect(validateData(schema, id, { n: 1 }).ok).toBe(true);
    expect(validateData(schema, id, { n: 2 }).ok).toBe(true);
    expect(errorsOf(schema, { n: 2.0001 })).toEqual([{ path: "/n", message: "must be at most 2" }]);
    expect(errorsOf(schema, { n: "1" })).toEqual([{ path: "/n", message: "must be a finite number" }]);
    expect(errorsOf(schema, { n: Number.NaN })).toEqual([{ path: "/n", message: "must be a finite number" }]);
  });

  test("a pattern matches anywhere unless the schema anchors it", () => {
    const loose: QueueMessageSchema = { s: { type: "string", pattern: "b+" } };
    const anchored: QueueMessageSchema = { s: { type: "string", pattern: "^b+$" } };
    expect(validateData(loose, schemaId(loose), { s: "abba" }).ok).toBe(true);
    expect(errorsOf(anchored, { s: "abba" })).toHaveLength(1);
    // Repeated runs prove the compiled RegExp keeps no state between messages.
    for (let i = 0; i < 3; i++) expect(validateData(anchored, schemaId(anchored), { s: "bb" }).ok).toBe(true);
  });

  test("enum compares exactly", () => {
    const schema: QueueMessageSchema = { s: { type: "string", enum: ["Gold"] } };
    expect(validateData(schema, schemaId(schema), { s: "Gold" }).ok).toBe(true);
    expect(errorsOf(schema, { s: "gold" })).toHaveLength(1);
    expect(errorsOf(schema, { s: "Gold " })).toHaveLength(1);
  });

  test("escapes property names in paths as JSON pointers", () => {
    const schema: QueueMessageSchema = { "a/b": { type: "number" } };
    expect(errorsOf(schema, { "a/b": "x", "c~d": 1 })).toEqual([
      { path: "/a~1b", message: "must be a finite number" },
      { path: "/c~0d", message: "is not a declared property" },
    ]);
  });
});

describe("checkerFor", () => {
  test("compiles once per id and reuses the checker", () => {
    const first = checkerFor(orderSchema, orderId);
    expect(checkerFor(orderSchema, orderId)).toBe(first);
    expect(checkerFor(structuredClone(orderSchema), orderId)).toBe(first);
  });

  test("drops the least recently used checker beyond 1000 entries", () => {
    const schema: QueueMessageSchema = { n: { type: "number" } };
    const oldest = checkerFor(schema, "evict-0");
    const kept = checkerFor(schema, "evict-1");
    for (let i = 2; i <= 1000; i++) checkerFor(schema, `evict-${i}`);
    // evict-1 is now the oldest entry; using it must save it from the next eviction.
    expect(checkerFor(schema, "evict-1")).toBe(kept);
    checkerFor(schema, "evict-1001");
    expect(checkerFor(schema, "evict-1")).toBe(kept);
    expect(checkerFor(schema, "evict-0")).not.toBe(oldest);
  });
});
