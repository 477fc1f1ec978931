/**
 * The OpenAPI document (GET /v1/openapi.json). @elysiajs/openapi generates it from the routes' TypeBox models;
 * `openapiDocument` then completes each operation with what a model cannot say, by rules every route follows:
 *
 * - security: every operation under /v1 needs `X-API-KEY`; the others (/healthz) need nothing unless their
 *   `detail.security` says otherwise;
 * - request bodies are application/json only, and optional where the route parses with `jsonOrEmpty` (body.ts);
 * - numbers are what they mean: Elysia's t.Integer (a number or a numeric string) is documented as `integer`;
 * - writes under /v1 (POST, PUT, DELETE) take an `Idempotency-Key` header (idempotency.ts): their successes may
 *   carry `Idempotent-Replayed`, and they may answer 400, 409 and 422 for it;
 * - responses: the route's success response, with `X-RateLimit-*` under /v1 and `Link` and `X-Total-Count` on
 *   paged lists (a `per_page` parameter); then the error statuses every route of its kind can answer (below,
 *   `derivedErrors`) and those its service may answer, declared in `detail.responses` with `refusals()`.
 *
 * A route documents itself with `detail: { summary, tags, responses: refusals(409, 422) }`, or
 * `responses: emptyOk("Deleted; the body is empty", 423)` when it answers 200 without a body.
 */
import type { AnyElysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi";
import { ErrorModel, TITLES } from "./errors.ts";
import { numericMember } from "./validation.ts";
import { OPTIONAL_BODY } from "./body.ts";
import { takesIdempotencyKey } from "./idempotency.ts";

type Json = Record<string, any>;
type Header = { description: string; schema: Json; required?: boolean };

const OPENAPI_VERSION = "3.1.1";
const ref = (kind: "headers" | "responses" | "schemas", name: string) => ({ $ref: `#/components/${kind}/${name}` });

const HEADERS: Record<string, Header> = {
  "X-RateLimit-Limit": { description: "Requests this API key may make per minute. Present while rate limiting is on.", schema: { type: "integer", minimum: 1 } },
  "X-RateLimit-Remaining": { description: "Requests left to this API key in the current window.", schema: { type: "integer", minimum: 0 } },
  "X-RateLimit-Reset": { description: "When the current window resets, in UTC epoch seconds.", schema: { type: "integer", minimum: 0 } },
  "Retry-After": { description: "Seconds to wait before trying again.", schema: { type: "integer", minimum: 0 } },
  Link: { description: 'RFC 8288 navigation between pages: `rel="first"`, `"prev"`, `"next"` and `"last"`.', schema: { type: "string" } },
  "X-Total-Count": { description: "Items in the whole list, on every page.", schema: { type: "integer", minimum: 0 } },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer of an earlier request with the same Idempotency-Key, which this request did not make again.",
    schema: { type: "string", enum: ["true"] },
  },
};
const RATE_LIMIT = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"];

export type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 409 | 413 | 415 | 422 | 423 | 429 | 500 | 503;

/**
 * What each error status means here (docs/api.md). `limited`: it can answer a request whose key was admitted, so it
 * may carry the rate-limit headers; `retryAfter`: whether Retry-After comes with it always or only sometimes.
 */
const ERRORS: Record<ErrorStatus, { description: string; limited: boolean; retryAfter?: "always" | "sometimes" }> = {
  400: {
    description: "The body is not JSON, or the body, a query parameter or the Idempotency-Key header does not have the expected shape; `errors` names each field.",
    limited: true,
  },
  401: { description: "The X-API-KEY header is missing, or the key is unknown or disabled (a portal token: unknown, expired or revoked).", limited: false },
  403: {
    description: "The key's scopes do not allow this request; or this client address is locked out after repeated failed authentications, then with Retry-After, whatever the key.",
    limited: true,
    retryAfter: "sometimes",
  },
  404: { description: "A resource the path names does not exist (ids of another organization do not exist either).", limited: true },
  406: { description: "The Accept header excludes application/json.", limited: false },
  409: {
    description: "The name is taken, or the resource changed while the request was being served (try again); or a request with the same Idempotency-Key is still being answered, or was made but its answer was lost (`detail` says which).",
    limited: true,
  },
  413: { description: "The body is over 1 MiB, or a message's data is over the configured limit.", limited: true },
  415: { description: "The body is not application/json.", limited: false },
  422: {
    description: "Well-formed but refused; `detail` says why and `errors` names each field where it can. Also: the Idempotency-Key was used in the last 24 hours for another request (method, path, body or API key).",
    limited: true,
  },
  423: { description: "The organization's owner key cannot be disabled, re-scoped or deleted.", limited: true },
  429: { description: "This API key's rate limit is exhausted for the current minute.", limited: true, retryAfter: "always" },
  500: { description: "An unexpected error; `detail` carries a request id to quote.", limited: true },
  503: { description: "The service is shutting down or its storage is unavailable.", limited: true, retryAfter: "always" },
};

const responseName = (status: ErrorStatus) => TITLES[status]!.replace(/[^A-Za-z]/g, "");

/** The headers an error status carries (ERRORS): Retry-After, and the rate-limit headers on a keyed request. */
function errorHeaders(status: ErrorStatus, keyed = true): Json {
  const { limited, retryAfter } = ERRORS[status];
  const headers: Json = {};
  // A $ref takes no siblings, so the header that is always there is written out with `required`.
  if (retryAfter) headers["Retry-After"] = retryAfter === "always" ? { ...HEADERS["Retry-After"], required: true } : ref("headers", "Retry-After");
  if (limited && keyed) for (const name of RATE_LIMIT) headers[name] = ref("headers", name);
  return headers;
}

function errorResponse(status: ErrorStatus): Json {
  const { description } = ERRORS[status];
  const headers = errorHeaders(status);
  return {
    description,
    ...(Object.keys(headers).length ? { headers } : {}),
    content: { "application/json": { schema: ref("schemas", "Error") } },
  };
}

/** The error statuses a route's service may answer besides those `derivedErrors` finds (for `detail.responses`). */
export function refusals(...statuses: ErrorStatus[]): Json {
  return Object.fromEntries(statuses.map((status) => [status, ref("responses", responseName(status))]));
}

/**
 * A 200 with an empty body (a DELETE), which no response model can describe, and the route's refusals: no
 * `content`, as the answer carries no Content-Type (app.ts `render`).
 */
export function emptyOk(description: string, ...statuses: ErrorStatus[]): Json {
  return { 200: { description }, ...refusals(...statuses) };
}

/** Elysia's coerced numbers become the number they stand for, anywhere in the document. */
function plainNumbers(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(plainNumbers);
  if (!node || typeof node !== "object") return node;
  const numeric = numericMember(node as Json);
  const { anyOf: _anyOf, ...rest } = node as Json;
  const source = numeric ? { ...rest, ...numeric } : (node as Json);
  return Object.fromEntries(Object.entries(source).map(([key, value]) => [key, plainNumbers(value)]));
}

/** A parameter whose schema is more than a bare string can be refused (400). */
const refusable = (schema: Json = {}) => schema.type !== "string" || Object.keys(schema).some((key) => key !== "type" && key !== "description");

/** The errors an operation can answer by its shape alone: every request, keyed requests, writes, bodies, parameters. */
function derivedErrors(op: Json, keyed: boolean, idempotent: boolean): ErrorStatus[] {
  const statuses: ErrorStatus[] = [406, 500, 503];
  if (keyed) statuses.push(401, 403, 429);
  if (idempotent) statuses.push(400, 409, 422);
  if (op.requestBody) statuses.push(400, 413, 415);
  const parameters: Json[] = op.parameters ?? [];
  if (parameters.some((p) => p.in === "path")) statuses.push(404);
  if (parameters.some((p) => refusable(p.schema))) statuses.push(400);
  return statuses;
}

type Route = { method: string; path: string; hooks?: Json };

function completeResponses(op: Json, route: Route, keyed: boolean, idempotent: boolean): Json {
  const declared: Json = route.hooks?.detail?.responses ?? {};
  const generated: Json = op.responses ?? {};
  const success: Json = {};
  for (const status of new Set([...Object.keys(declared), ...Object.keys(generated)])) {
    if (Number(status) >= 400) continue;
    const headers: Json = {};
    if (keyed) for (const name of RATE_LIMIT) headers[name] = ref("headers", name);
    if (idempotent) headers["Idempotent-Replayed"] = ref("headers", "Idempotent-Replayed");
    if ((op.parameters ?? []).some((p: Json) => p.in === "query" && p.name === "per_page")) {
      headers.Link = ref("headers", "Link");
      headers["X-Total-Count"] = ref("headers", "X-Total-Count");
    }
    success[status] = { ...generated[status], ...declared[status], ...(Object.keys(headers).length ? { headers } : {}) };
  }
  if (!Object.keys(success).length) throw new Error(`${route.method} ${route.path} documents no success response`);
  // An error status with a response model of the route's own (a body that is not the shared error) keeps it,
  // with the headers of its status (GET /readyz: its own 503 body, with Retry-After).
  const ownErrors = [...Object.keys(declared), ...Object.keys(generated)].map(Number).filter((s) => s >= 400);
  const errors = [...new Set<number>([...derivedErrors(op, keyed, idempotent), ...ownErrors])].sort((a, b) => a - b);
  const own = (status: number): Json => {
    const headers = status in ERRORS && !generated[status].$ref ? errorHeaders(status as ErrorStatus, keyed) : {};
    return Object.keys(headers).length ? { ...generated[status], headers } : generated[status];
  };
  return { ...success, ...Object.fromEntries(errors.map((s) => [s, generated[s] ? own(s) : declared[s] ?? ref("responses", responseName(s as ErrorStatus))])) };
}

/** Every endpoint takes `pretty`; the app honours it for every route, declared in its query model or not. */
const PRETTY = { name: "pretty", in: "query", required: false, schema: { type: "string", description: "indent the JSON response: `true`, `1` or empty" } };

const IDEMPOTENCY_KEY = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: within 24 hours, the same request (method, path, JSON body, API key) with the same key gets the first answer again, with `Idempotent-Replayed: true`, and changes nothing. Errors are not kept.",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7E]+$" },
};

function completeOperation(op: Json, route: Route, keyed: boolean): Json {
  const out: Json = { ...op };
  const idempotent = keyed && takesIdempotencyKey(route.method);
  const parameters: Json[] = op.parameters ?? [];
  out.parameters = [...parameters];
  if (!parameters.some((p) => p.in === "query" && p.name === "pretty")) out.parameters.push(PRETTY);
  if (idempotent) out.parameters.push(IDEMPOTENCY_KEY);
  if (op.requestBody) {
    const optional = (route.hooks?.parse ?? []).some((p: Json) => typeof p.fn === "function" && p.fn[OPTIONAL_BODY]);
    const { description } = op.requestBody;
    out.requestBody = { ...(description ? { description } : {}), required: !optional, content: { "application/json": op.requestBody.content["application/json"] } };
  }
  out.responses = completeResponses(op, route, keyed, idempotent);
  if (!keyed) out.security = route.hooks?.detail?.security ?? [];
  return plainNumbers(out) as Json;
}

function components(): Json {
  const used = Object.keys(ERRORS).map(Number) as ErrorStatus[];
  return {
    securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "X-API-KEY", description: "An API key; its scopes limit what it may do. A portal session's token (`fop_…`) is sent here too, and reaches only its session's listeners." } },
    schemas: { Error: ErrorModel },
    headers: HEADERS,
    responses: Object.fromEntries(used.map((status) => [responseName(status), errorResponse(status)])),
  };
}

export type DocumentInfo = { title: string; version: string; description: string };

/**
 * The document of `app` (the root app, every route registered), made once; `servers` names the origin the
 * document was asked from, as `_links` do.
 */
export function openapiDocument(app: AnyElysia, info: DocumentInfo): (origin: string) => Json {
  let made: Json | undefined;
  const make = (): Json => {
    const { paths } = toOpenAPISchema(app, undefined, undefined, undefined, OPENAPI_VERSION) as { paths: Record<string, Json> };
    const completed: Record<string, Json> = {};
    for (const route of app.routes as Route[]) {
      const path = route.path.replace(/:([^/]+)/g, "{$1}");
      const method = route.method.toLowerCase();
      const op = paths[path]?.[method];
      if (!op) continue;
      (completed[path] ??= {})[method] = completeOperation(op, route, path.startsWith("/v1/"));
    }
    return { openapi: OPENAPI_VERSION, info, security: [{ ApiKey: [] }], paths: completed, components: components() };
  };
  return (origin) => {
    made ??= make();
    return { ...made, servers: [{ url: origin }] };
  };
}
