/**
 * The one place errors become responses: `{ title, status }`, plus `detail` (one sentence) and `errors`
 * (`[{ path, message }]`) where useful. No stack trace, secret or payload is ever rendered.
 */
import { AppError, type FieldError } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import { splitUrl } from "./request-url.ts";

export const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  423: "Locked",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

export type ErrorBody = { title: string; status: number; detail?: string; errors?: FieldError[] };

export function errorBody(status: number, detail?: string, errors?: FieldError[]): ErrorBody {
  const body: ErrorBody = { title: TITLES[status] ?? "Error", status };
  if (detail) body.detail = detail;
  if (errors?.length) body.errors = errors;
  return body;
}

export function errorResponse(status: number, detail?: string, errors?: FieldError[], headers?: Record<string, string>): Response {
  return Response.json(errorBody(status, detail, errors), { status, headers });
}

export function fromAppError(e: AppError): Response {
  return errorResponse(e.status, e.detail, e.errors, e.headers);
}

/** TypeBox errors of a request part, as `{ path, message }` with the part named ("body/name"). */
export function validationErrors(part: string, all: { path?: string; message?: string; summary?: string }[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of all) {
    const path = `${part}${e.path ?? ""}`;
    const message = e.summary ?? e.message ?? "is invalid";
    const key = `${path} ${message}`;
    if (!seen.has(key)) seen.add(key), out.push({ path, message });
  }
  return out.slice(0, 50);
}

/** What failed, as Elysia's onError names it: its error code, or none for an error thrown by our own code. */
export type Failure = { code?: string | number; error: unknown; request: Request };

/**
 * Every failure of a request as its response: the app's onError (app.ts) and the hot routes (hot.ts) both answer
 * through this, so a request gets the same answer whichever path served it. `allowed` lists a path's methods
 * (for 405 on an unknown method); an unexpected error is logged with an id the response repeats.
 */
export function failureResponse({ code, error, request }: Failure, log: Logger, allowed: (path: string) => string[] = () => []): Response {
  if (error instanceof AppError) return fromAppError(error);
  if (code === "VALIDATION") {
    const v = error as { type: string; all: { path?: string; message?: string; summary?: string }[] };
    return errorResponse(400, "The request does not have the expected shape.", validationErrors(v.type, v.all));
  }
  // A body that failed while it was read (over the limit: negotiation.ts) reaches a parser as its cause.
  if (code === "PARSE") return (error as Error)?.cause instanceof AppError ? fromAppError((error as Error).cause as AppError) : errorResponse(400, "The body is not valid JSON.");
  if (code === "NOT_FOUND") {
    const methods = allowed(splitUrl(request.url).path);
    if (methods.length) return errorResponse(405, `This path allows ${methods.join(", ")}.`, undefined, { allow: methods.join(", ") });
    return errorResponse(404, "No such path.");
  }
  const requestId = crypto.randomUUID();
  log.error("unexpected error", { requestId, method: request.method, path: splitUrl(request.url).path, error: String((error as Error)?.stack ?? error) });
  return errorResponse(500, `Unexpected error; request id ${requestId}.`);
}
