/**
 * Request bodies, read once and bounded before anything parses them: at most MAX_BODY_BYTES (a body without a
 * declared length is only known once read) and at most MAX_JSON_DEPTH levels (lib/json-depth.ts), both in
 * linear time, so a hostile body costs what its bytes cost.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../lib/json-depth.ts";
import { errorResponse } from "./errors.ts";
import { hasBody, MAX_BODY_BYTES } from "./negotiation.ts";

/** The refusal of a body's text, or undefined when it may be parsed. */
export function refuseBody(text: string): Response | undefined {
  if (text.length > MAX_BODY_BYTES && Buffer.byteLength(text, "utf8") > MAX_BODY_BYTES) {
    return errorResponse(413, `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    return errorResponse(400, `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  return undefined;
}

/** Makes a request from another one (the server keeps track of which socket it came from). */
export type CopyRequest = (original: Request, init: RequestInit) => Request;

const plainCopy: CopyRequest = (original, init) => new Request(original.url, init);

/**
 * The request with its body read and checked, as a copy whose body is that text, or the refusal. Requests
 * without a body (GET, DELETE, an empty PUT) pass unchanged.
 */
export async function checkedBody(request: Request, copy: CopyRequest = plainCopy): Promise<Request | Response> {
  if (request.method === "GET" || request.method === "HEAD" || !hasBody(request)) return request;
  const read = await readBody(request, copy);
  return read instanceof Response ? read : read.request;
}

/** As `checkedBody`, for a caller that needs the text too ("" without a body). */
export async function readBody(request: Request, copy: CopyRequest = plainCopy): Promise<{ request: Request; text: string } | Response> {
  if (!hasBody(request)) return { request, text: "" };
  const text = await request.text();
  return refuseBody(text) ?? { request: copy(request, { method: request.method, headers: request.headers, body: text === "" ? null : text }), text };
}

/**
 * Optional JSON bodies (SPEC §4: a PUT without one carries Content-Length 0). Elysia 1.4 turns malformed JSON into
 * "no body" when the body schema is optional, so routes declare the body required and parse with this hook: an
 * empty body becomes `empty`, malformed JSON still fails as 400. The trailing "json" never runs (the hook always
 * answers); it keeps application/json as the body's content type in the OpenAPI document, where the parser's
 * OPTIONAL_BODY mark makes the body optional (openapi.ts).
 */
export const OPTIONAL_BODY = Symbol("optional body");

export const jsonOrEmpty = (empty: unknown = {}) => {
  const parse = async ({ request }: { request: Request }) => {
    const text = await request.text();
    return text === "" ? empty : JSON.parse(text);
  };
  return [Object.assign(parse, { [OPTIONAL_BODY]: true }), "json" as const] as any;
};
