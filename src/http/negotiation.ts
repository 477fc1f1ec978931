/**
 * Checks that run before routing, so they hold for unknown routes too: only JSON is spoken (406, 415) and
 * bodies are bounded before anyone parses them (413 past 1 MiB, docs/api.md): a declared length here, a body
 * without one (chunked, or HTTP/2 without content-length) while it is read (body.ts).
 */
import { errorResponse } from "./errors.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

function acceptsJson(accept: string | null): boolean {
  if (!accept) return true;
  return accept.split(",").some((part) => {
    const [type, ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    if (q && Number(q.slice(2)) === 0) return false;
    return type === "*/*" || type === "application/*" || type === "application/json" || type.endsWith("+json");
  });
}

/**
 * Decided from headers: over HTTP/2 Bun hands every request a body stream, empty or not, so the stream's
 * presence says nothing. A body without length is chunked (HTTP/1.1) or announced by its content-type.
 */
export function hasBody(request: Request, length = request.headers.get("content-length")): boolean {
  if (length !== null) return length !== "0";
  return request.headers.has("transfer-encoding") || request.headers.has("content-type");
}

function isJson(contentType: string | null): boolean {
  const type = contentType?.split(";")[0].trim().toLowerCase();
  return type === "application/json" || !!type?.endsWith("+json");
}

/**
 * A body over the limit is still read to its end (and dropped) up to `DRAINED_BYTES`, so the client, which is
 * still sending, gets the 413 rather than a reset; past that the answer closes an HTTP/1.1 connection (Bun drops
 * the header over HTTP/2), so Bun does not read and discard a body of any size.
 */
export const DRAINED_BYTES = 8 * MAX_BODY_BYTES;
export const TOO_LARGE = `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`;

export const notJson = () => errorResponse(415, "Request bodies must be application/json.");

export function negotiate(request: Request): Response | undefined {
  const length = request.headers.get("content-length");
  const refused = refusal(request, length);
  if (refused && Number(length ?? 0) > DRAINED_BYTES) refused.headers.set("connection", "close");
  return refused;
}

function refusal(request: Request, length: string | null): Response | undefined {
  if (!acceptsJson(request.headers.get("accept"))) {
    return errorResponse(406, "Responses are application/json; the Accept header excludes it.");
  }
  if (!hasBody(request, length)) return undefined;
  if (!isJson(request.headers.get("content-type"))) return notJson();
  if (Number(length ?? 0) > MAX_BODY_BYTES) return errorResponse(413, TOO_LARGE);
  return undefined;
}
