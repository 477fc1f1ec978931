/**
 * Request bodies, read once and bounded before anything parses them: at most MAX_BODY_BYTES (a body without a
 * declared length is only known once read) and at most MAX_JSON_DEPTH levels (lib/json-depth.ts), both in
 * linear time, so a hostile body costs what its bytes cost.
 */
import { AppError } from "../lib/errors.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../lib/json-depth.ts";
import { errorResponse } from "./errors.ts";
import { DRAINED_BYTES, hasBody, MAX_BODY_BYTES, notJson, TOO_LARGE } from "./negotiation.ts";

/** The refusal of a body's text, or undefined when it may be parsed. */
export function refuseBody(text: string): Response | undefined {
  if (text.length > MAX_BODY_BYTES && Buffer.byteLength(text, "utf8") > MAX_BODY_BYTES) return errorResponse(413, TOO_LARGE);
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    return errorResponse(400, `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  return undefined;
}

/** Makes a request from another one (the server keeps track of which socket it came from). */
export type CopyRequest = (original: Request, init: RequestInit) => Request;

export const plainCopy: CopyRequest = (original, init) => new Request(original.url, init);

/**
 * The body's text, or its refusal; null when it is not read: no body, or a GET or HEAD, whose bodies no route
 * parses. A declared length was checked by `negotiate`, and Bun holds the body to it.
 */
export async function boundedText(request: Request): Promise<string | null | Response> {
  if (request.method === "GET" || request.method === "HEAD") return null;
  if (hasBody(request)) {
    const text = request.headers.get("content-length") === null ? await readUndeclared(request) : await request.text();
    return refuseBody(text) ?? text;
  }
  if (!request.body) return null;
  // Over HTTP/2 a body may come with neither a length nor a type, which `negotiate` cannot see: one that is
  // there is refused as over HTTP/1.1, where it would have needed a length and so been judged by its type.
  const text = await readUndeclared(request);
  return text === "" ? text : notJson();
}

/**
 * A body without a declared length (chunked, or HTTP/2 without content-length), read up to the limit. Past it
 * the rest is still read and dropped up to DRAINED_BYTES, so a client still sending gets the 413 rather than a
 * reset; past that the 413 closes the connection, so Bun does not read a body of any size (negotiation.ts).
 */
async function readUndeclared(request: Request): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.byteLength;
    if (read <= MAX_BODY_BYTES) chunks.push(value);
    else if (read > DRAINED_BYTES) {
      void reader.cancel().catch(() => undefined); // the answer closes the connection; nothing more is wanted of it
      throw new AppError(413, TOO_LARGE, undefined, { connection: "close" });
    }
  }
  if (read > MAX_BODY_BYTES) throw new AppError(413, TOO_LARGE);
  return Buffer.concat(chunks, read).toString("utf8");
}

/**
 * Optional JSON bodies (a PUT without one carries Content-Length 0). Elysia 1.4 turns malformed JSON into
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
