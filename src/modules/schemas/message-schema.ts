import { createHash } from "node:crypto";
import { compileSchema, freshBudget, type Check } from "./data-checkers.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../lib/json-depth.ts";
import { canonicalJson } from "../../lib/canonical-json.ts";

export { checkSchema, MAX_SCHEMA_DEPTH } from "./schema-checks.ts";

/** `path` is a JSON pointer ("/customer/email"), "" for the root. */
export type FieldError = { path: string; message: string };

/** A map of property names to directives; the top level is an object directive's `props` with `strict: true`. */
export type QueueMessageSchema = Record<string, Directive>;

export type Directive =
  | { type: "object"; props: Record<string, Directive>; required?: boolean; strict?: boolean }
  | { type: "array"; items: Directive; required?: boolean }
  | {
      type: "string";
      pattern?: string | null;
      enum?: string[] | null;
      min?: number | null;
      max?: number | null;
      required?: boolean;
    }
  | { type: "number"; min?: number | null; max?: number | null; required?: boolean };

export type DataCheck = { ok: true; value: unknown } | { ok: false; errors: FieldError[] };

/** The queue's `schema_id`: equal schemas get equal ids whatever their key order (docs/api.md). */
export function schemaId(schema: QueueMessageSchema): string {
  return createHash("sha256").update(canonicalJson(schema), "utf8").digest("hex");
}

// Every publish validates, so each schema is compiled once. A closure compiler rather than TypeBox because
// TypeBox counts string length in UTF-16 units where schemas count code points, and its paths and
// messages would need remapping anyway.
const CACHE_LIMIT = 1000;
const checkers = new Map<string, Check>();

/**
 * The compiled checker for a schema, cached by `id`, which must be schemaId(schema) of a schema that
 * passed checkSchema. Least recently used entries go first once the cache is full.
 */
export function checkerFor(schema: QueueMessageSchema, id: string): Check {
  const cached = checkers.get(id);
  if (cached !== undefined) {
    checkers.delete(id);
    checkers.set(id, cached);
    return cached;
  }
  const check = compileSchema(schema);
  checkers.set(id, check);
  if (checkers.size > CACHE_LIMIT) checkers.delete(checkers.keys().next().value!);
  return check;
}

/**
 * Checks message data against its queue's schema. A string is taken to hold JSON, as some clients send it,
 * and the parsed value is both what is checked and what is returned for storage.
 */
export function validateData(schema: QueueMessageSchema, id: string, data: unknown): DataCheck {
  let value = data;
  if (typeof data === "string") {
    // The body's own depth was bounded before parsing (http/body.ts); JSON inside a string is bounded here.
    if (nestsDeeperThan(data)) return { ok: false, errors: [{ path: "", message: `data must be JSON nested at most ${MAX_JSON_DEPTH} levels` }] };
    try {
      value = JSON.parse(data);
    } catch {
      // The parser's message names an offset in the client's string; one clear sentence serves them better.
      return { ok: false, errors: [{ path: "", message: "data must be JSON" }] };
    }
  }
  const errors: FieldError[] = [];
  checkerFor(schema, id)(value, "", errors, freshBudget());
  return errors.length === 0 ? { ok: true, value } : { ok: false, errors };
}
