/**
 * The one place errors become responses: `{ title, status }`, plus `detail` (one sentence) and `errors`
 * (`[{ path, message }]`) where useful. No stack trace, secret or payload is ever rendered.
 */
import { AppError, type FieldError } from "../lib/errors.ts";

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
