import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { checkHeaders, HIDDEN_HEADER_VALUE, hideHeaderValues, ListenerHeadersShape, MAX_HEADERS, MAX_HEADERS_BYTES, RESERVED_HEADER_NAMES } from "./headers.ts";

const pathsOf = (headers: unknown) => checkHeaders(headers).map((error) => error.path);

describe("checkHeaders", () => {
  test("accepts tokens with printable values, an empty object and empty values", () => {
    expect(checkHeaders({})).toEqual([]);
    expect(checkHeaders({ Authorization: "Bearer abc.def", "X-Api-Key": "k", "x-tenant": "", "!#$%&'*+-.^_`|~09AZaz": "~ ~" })).toEqual([]);
    expect(checkHeaders({ "X-Printable": Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).join("") })).toEqual([]);
  });

  test("must be an object", () => {
    for (const value of [null, undefined, "a: b", 1, [], [["a", "b"]]]) {
      expect(checkHeaders(value)).toEqual([{ path: "/headers", message: "must be an object of header names to string values" }]);
    }
    expect(checkHeaders([], "/listener/headers")[0]!.path).toBe("/listener/headers");
  });

  test("at most 20 headers", () => {
    const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
    expect(checkHeaders(headers(MAX_HEADERS))).toEqual([]);
    expect(checkHeaders(headers(MAX_HEADERS + 1))).toEqual([{ path: "/headers", message: "holds 21 headers; at most 20" }]);
  });

  test("names are HTTP tokens", () => {
    for (const name of ["", "x token", "x:token", "x/y", "x(y)", 'x"y', "x,y", "x;y", "x@y", "x[y]", "x{y}", "x=y", "x?y", "x\\y", "é", "x\ty", "x\ny"]) {
      const errors = checkHeaders({ [name]: "v" });
      expect({ name, errors }).toEqual({
        name,
        errors: [{ path: "/headers" + "/" + name.replaceAll("~", "~0").replaceAll("/", "~1"), message: "is not an HTTP header name: 1 or more letters, digits and !#$%&'*+-.^_`|~" }],
      });
    }
  });

  test("reserved names are refused whatever their case", () => {
    for (const name of RESERVED_HEADER_NAMES) {
      expect(pathsOf({ [name]: "v" })).toEqual([`/headers/${name}`]);
      const upper = name.toUpperCase();
      expect(checkHeaders({ [upper]: "v" })).toEqual([{ path: `/headers/${upper}`, message: "is set by fanout or by HTTP itself and cannot be given" }]);
    }
    expect(RESERVED_HEADER_NAMES.size).toBe(11);
    for (const name of ["webhook-id", "Webhook-Signature", "WEBHOOK-timestamp", "webhook-anything"]) {
      expect(checkHeaders({ [name]: "v" })).toEqual([{ path: `/headers/${name}`, message: "is reserved: webhook-* headers carry fanout's signature" }]);
    }
    expect(checkHeaders({ webhook: "v", "x-webhook-id": "v", "host-name": "v", "content-type-hint": "v", tee: "v" })).toEqual([]);
  });

  test("names are unique ignoring case; the repeat is named", () => {
    expect(checkHeaders({ "X-Token": "a", "x-token": "b", "X-TOKEN": "c" })).toEqual([
      { path: "/headers/x-token", message: "repeats the header X-Token (header names ignore case)" },
      { path: "/headers/X-TOKEN", message: "repeats the header X-Token (header names ignore case)" },
    ]);
  });

  test("values are printable ASCII and spaces, and no message quotes them", () => {
    const secret = "sk_live_\u00e9secret";
    for (const value of [secret, "a\tb", "a\r\nInjected: 1", "a\u0000", "\u007f", "😀", "a\u0085"]) {
      const errors = checkHeaders({ Authorization: value });
      expect(errors.map((e) => e.path)).toEqual(["/headers/Authorization"]);
      expect(errors[0]!.message).toMatch(/^must hold only printable ASCII characters and spaces \(character \d+ is not\)$/);
    }
    expect(JSON.stringify(checkHeaders({ Authorization: secret }))).not.toContain("secret");
    for (const value of [1, null, true, ["a"], { a: "b" }]) {
      expect(checkHeaders({ "X-A": value })).toEqual([{ path: "/headers/X-A", message: "must be a string" }]);
    }
  });

  test("a value holds at most 1,024 bytes", () => {
    expect(checkHeaders({ "X-A": "v".repeat(1024) })).toEqual([]);
    expect(checkHeaders({ "X-A": "v".repeat(1025) })).toEqual([{ path: "/headers/X-A", message: "is 1025 bytes; at most 1024" }]);
  });

  test("names and values hold at most 8 KB in all", () => {
    // 8 headers: names "x-h0".."x-h7" (4 bytes each) and values filling the rest.
    const filled = (extra: number) =>
      Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`x-h${i}`, "v".repeat(i === 7 ? MAX_HEADERS_BYTES / 8 - 4 + extra : MAX_HEADERS_BYTES / 8 - 4)]));
    expect(checkHeaders(filled(0))).toEqual([]);
    expect(checkHeaders(filled(1))).toEqual([{ path: "/headers", message: "holds 8193 bytes of names and values; at most 8192" }]);
  });

  test("every problem is reported", () => {
    expect(pathsOf({ Host: "x", "bad name": "v", "X-A": "\n", "x-a": 1, "Webhook-Id": "w" })).toEqual([
      "/headers/Host",
      "/headers/bad name",
      "/headers/X-A",
      "/headers/x-a",
      "/headers/x-a",
      "/headers/Webhook-Id",
    ]);
  });
});

describe("hideHeaderValues", () => {
  test("keeps the names and replaces every value", () => {
    expect(hideHeaderValues({ Authorization: "Bearer secret", "X-Empty": "" })).toEqual({ Authorization: HIDDEN_HEADER_VALUE, "X-Empty": HIDDEN_HEADER_VALUE });
    expect(HIDDEN_HEADER_VALUE).toBe("[hidden]");
    expect(hideHeaderValues({})).toEqual({});
  });

  test("a header named like an Object property stays a header", () => {
    const headers = JSON.parse('{"__proto__": "secret", "constructor": "c"}');
    expect(checkHeaders(headers)).toEqual([]);
    const hidden = hideHeaderValues(headers);
    expect(Object.keys(hidden)).toEqual(["__proto__", "constructor"]);
    expect(JSON.stringify(hidden)).toBe('{"__proto__":"[hidden]","constructor":"[hidden]"}');
  });
});

test("the TypeBox shape admits any object of strings, leaving the rules to checkHeaders", () => {
  expect(Value.Check(ListenerHeadersShape, { Host: "x", "bad name": "\n" })).toBe(true);
  expect(Value.Check(ListenerHeadersShape, { "X-A": 1 })).toBe(false);
  expect(Value.Check(ListenerHeadersShape, ["a"])).toBe(false);
});
