/**
 * Checks that run before routing, so they hold for unknown routes too: only JSON is spoken (406, 415) and
 * bodies are bounded before anyone parses them (413; PRODUCT §8: 1 MiB).
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
export function hasBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  if (length !== null) return length !== "0";
  return request.headers.has("transfer-encoding") || request.headers.has("content-type");
}

function isJson(contentType: string | null): boolean {
  const type = contentType?.split(";")[0].trim().toLowerCase();
  return type === "application/json" || !!type?.endsWith("+json");
}

export function negotiate(request: Request): Response | undefined {
  if (!acceptsJson(request.headers.get("accept"))) {
    return errorResponse(406, "Responses are application/json; the Accept header excludes it.");
  }
  if (!hasBody(request)) return undefined;
  if (!isJson(request.headers.get("content-type"))) {
    return errorResponse(415, "Request bodies must be application/json.");
  }
  if (Number(request.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
    return errorResponse(413, `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
  }
  return undefined;
}
