/**
 * Validation failures as `errors[]` a person can act on. `path` is a JSON Pointer into the body (`/name`,
 * `/scopes/0/resource`, `""` for the body itself) or, for the query, a path or a header, the parameter's name
 * (`per_page`); `message` says what the value must be, read from the model that refused it ("must be an integer
 * from 1 to 100"). Elysia's own summaries name TypeBox's internals ("should be one of: 'integer', 'integer'").
 */
import { ValueErrorType } from "@sinclair/typebox/errors";
import type { FieldError } from "../lib/errors.ts";

type Schema = Record<string, any>;
/** One TypeBox error, as ValidationError.all lists it. */
type ValueFailure = { type?: number; path?: string; schema?: Schema; message?: string; value?: unknown };
/** What onError gets for code VALIDATION (Elysia's ValidationError), reduced to what is read here. */
export type ValidationFailure = { type: string; all: ValueFailure[]; validator?: unknown; customError?: unknown };

const MAX_ERRORS = 50;

/** Elysia's t.Integer and t.Numeric accept a numeric string beside the number; the number is what is meant. */
export function numericMember(schema: Schema): Schema | undefined {
  const [text, value] = Array.isArray(schema.anyOf) && schema.anyOf.length === 2 ? schema.anyOf : [];
  const coerced = text?.type === "string" && (text.format === "integer" || text.format === "numeric");
  return coerced && (value?.type === "integer" || value?.type === "number") ? value : undefined;
}

function range(min: unknown, max: unknown): string {
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  return max !== undefined ? ` of at most ${max}` : "";
}

function size(min: unknown, max: unknown, unit: string): string {
  if (min !== undefined && max !== undefined) return min === max ? ` of ${min} ${unit}` : ` of ${min} to ${max} ${unit}`;
  if (min !== undefined) return ` of at least ${min} ${unit}`;
  return max !== undefined ? ` of at most ${max} ${unit}` : "";
}

/** What a value of `schema` is, as a noun phrase: "an integer from 1 to 100", "one of: read, write". */
export function expectation(schema: Schema): string {
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.anyOf)) {
    const numeric = numericMember(schema);
    if (numeric) return expectation({ ...schema, ...numeric, anyOf: undefined });
    const members = schema.anyOf as Schema[];
    if (members.every((m) => "const" in m)) return `one of: ${members.map((m) => m.const).join(", ")}`;
    return [...new Set(members.map(expectation))].join(" or ");
  }
  switch (schema.type) {
    case "integer":
      return `an integer${range(schema.minimum, schema.maximum)}`;
    case "number":
      return `a number${range(schema.minimum, schema.maximum)}`;
    case "string":
      return `a string${size(schema.minLength, schema.maxLength, "characters")}`;
    case "array":
      return `an array${size(schema.minItems, schema.maxItems, "items")}`;
    case "object":
      return "an object";
    case "boolean":
      return "true or false";
    case "null":
      return "null";
    default:
      return "a JSON value";
  }
}

function messageOf(e: ValueFailure): string {
  const schema = e.schema ?? {};
  // A missing body (PUT without one) or field: what it must be comes second.
  if (e.value === undefined && e.type !== ValueErrorType.ObjectAdditionalProperties) return "is required";
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "is required";
    case ValueErrorType.ObjectAdditionalProperties:
      return "is not a known field";
    case ValueErrorType.StringPattern:
      return schema.description ? `must be ${schema.description}` : `must match ${schema.pattern}`;
    case ValueErrorType.StringFormat:
      return `must be a valid ${schema.format}`;
    default:
      return e.schema ? `must be ${expectation(schema)}` : (e.message ?? "is invalid");
  }
}

/** The body keeps its JSON Pointer; a query parameter, path parameter or header is named by its first segment. */
function pathOf(part: string, pointer: string): string {
  if (part === "body") return pointer;
  const first = pointer.split("/")[1] ?? "";
  return first.replaceAll("~1", "/").replaceAll("~0", "~");
}

/**
 * A "property" failure is a coerced query value (Elysia's t.Integer) out of its bounds, which Elysia reports
 * without the parameter's name: `Query` (modules/shared-model.ts) gives each such parameter an `error` hook
 * that returns its name.
 */
function nameOf(failure: ValidationFailure): string {
  const custom = failure.customError as { path?: unknown } | undefined;
  return typeof custom?.path === "string" ? custom.path : "";
}

export function fieldErrors(failure: ValidationFailure): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of failure.all) {
    const path = failure.type === "property" ? nameOf(failure) : pathOf(failure.type, e.path ?? "");
    // The first failure at a path says the most ("is required" before "must be …" for a missing value).
    if (seen.has(path)) continue;
    seen.add(path);
    out.push({ path, message: messageOf(e) });
    if (out.length === MAX_ERRORS) break;
  }
  return out;
}
