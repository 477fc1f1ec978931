/**
 * A listener's own headers, sent on every delivery request and liveness probe to it (a receiver behind a
 * gateway that wants a token, say). Names are HTTP tokens, unique ignoring case; the ones fanout sets itself,
 * or that would change how the request is framed or signed, are refused. Values may be credentials: no message
 * here ever quotes one, and keys that may only read the listener see each as HIDDEN_HEADER_VALUE.
 */
import { Type } from "@sinclair/typebox";
import type { FieldError } from "../../lib/errors.ts";
import { pointerSegment } from "../../lib/json-pointer.ts";

export type ListenerHeaders = Record<string, string>;

export const MAX_HEADERS = 20;
export const MAX_HEADER_VALUE_BYTES = 1024;
/** Names and values together. */
export const MAX_HEADERS_BYTES = 8 * 1024;
export const HIDDEN_HEADER_VALUE = "[hidden]";

/** Set by fanout on every request, or hop-by-hop headers that would change how it is framed. */
export const RESERVED_HEADER_NAMES: ReadonlySet<string> = new Set([
  "host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
  "upgrade", "expect", "user-agent",
]);
/** The Standard Webhooks headers (webhook-id, -timestamp, -signature) and any future one are fanout's own. */
const RESERVED_PREFIX = "webhook-";

/**
 * The shape for a route's model: an object of strings. The rules live in checkHeaders, which names each
 * offending header with a 422, rather than in the schema, whose failures would be 400s.
 */
export const ListenerHeadersShape = Type.Record(Type.String(), Type.String(), {
  description:
    `up to ${MAX_HEADERS} header names (HTTP tokens, unique ignoring case) to values (printable ASCII and spaces, at most ` +
    `${MAX_HEADER_VALUE_BYTES} bytes each, ${MAX_HEADERS_BYTES} bytes with the names in all), sent on every delivery and ` +
    `liveness probe; host, content-length, content-type, transfer-encoding, connection, keep-alive, te, trailer, upgrade, ` +
    `expect, user-agent and names starting with webhook- are refused`,
});

/** Every problem with a `headers` object, each at `base` or `base/<name>`; [] when it may be saved. */
export function checkHeaders(value: unknown, base = "/headers"): FieldError[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return [{ path: base, message: "must be an object of header names to string values" }];
  }
  const errors: FieldError[] = [];
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_HEADERS) errors.push({ path: base, message: `holds ${entries.length} headers; at most ${MAX_HEADERS}` });
  const seen = new Map<string, string>();
  let bytes = 0;
  for (const [name, headerValue] of entries) {
    const path = base + pointerSegment(name);
    const nameProblem = headerNameProblem(name, seen);
    if (nameProblem !== null) errors.push({ path, message: nameProblem });
    if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
    bytes += Buffer.byteLength(name, "utf8");
    if (typeof headerValue !== "string") {
      errors.push({ path, message: "must be a string" });
      continue;
    }
    bytes += Buffer.byteLength(headerValue, "utf8");
    const valueProblem = headerValueProblem(headerValue);
    if (valueProblem !== null) errors.push({ path, message: valueProblem });
  }
  if (bytes > MAX_HEADERS_BYTES) errors.push({ path: base, message: `holds ${bytes} bytes of names and values; at most ${MAX_HEADERS_BYTES}` });
  return errors;
}

function headerNameProblem(name: string, seen: Map<string, string>): string | null {
  if (!isToken(name)) return "is not an HTTP header name: 1 or more letters, digits and !#$%&'*+-.^_`|~";
  const lower = name.toLowerCase();
  if (RESERVED_HEADER_NAMES.has(lower)) return "is set by fanout or by HTTP itself and cannot be given";
  if (lower.startsWith(RESERVED_PREFIX)) return "is reserved: webhook-* headers carry fanout's signature";
  const earlier = seen.get(lower);
  if (earlier !== undefined) return `repeats the header ${earlier} (header names ignore case)`;
  return null;
}

/** Says what is wrong without quoting the value, which may be a secret. */
function headerValueProblem(value: string): string | null {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return `must hold only printable ASCII characters and spaces (character ${i + 1} is not)`;
  }
  if (value.length > MAX_HEADER_VALUE_BYTES) return `is ${value.length} bytes; at most ${MAX_HEADER_VALUE_BYTES}`;
  return null;
}

/** tchar of RFC 9110: ALPHA, DIGIT and !#$%&'*+-.^_`|~. */
function isToken(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const alphanumeric = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!alphanumeric && !"!#$%&'*+-.^_`|~".includes(name[i]!)) return false;
  }
  return true;
}

/** What a key that may only read the listener sees: the names, each value replaced. */
export function hideHeaderValues(headers: ListenerHeaders): ListenerHeaders {
  // fromEntries defines own properties, so a header named __proto__ stays a header.
  return Object.fromEntries(Object.keys(headers).map((name) => [name, HIDDEN_HEADER_VALUE]));
}
