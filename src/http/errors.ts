/**
 * The one place errors become responses: `{ title, status }`, plus `detail` (one sentence) and `errors`
 * (`[{ path, message }]`) where useful. No stack trace, secret or payload is ever rendered.
 */
import { Type, type Static } from "@sinclair/typebox";
import { AppError, type FieldError } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import { splitUrl } from "./request-url.ts";
import { fieldErrors, type ValidationFailure } from "./validation.ts";

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

/** The body of every error response, as the OpenAPI document shows it (`#/components/schemas/Error`). */
export const ErrorModel = Type.Object(
  {
    title: Type.String({ description: "the status's name, e.g. `Not Found`" }),
    status: Type.Integer({ description: "the HTTP status, repeated" }),
    detail: Type.Optional(Type.String({ description: "one sentence for a person" })),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          path: Type.String({ description: "a JSON Pointer into the body (`/name`, `\"\"` for the body itself), or the name of the query parameter (`per_page`)" }),
          message: Type.String({ description: "what the value must be, e.g. `must be an integer from 1 to 100`" }),
        }),
        { description: "each field that was refused" },
      ),
    ),
  },
  { description: "An error: `{ title, status }`, plus `detail` and `errors` where useful" },
);

export type ErrorBody = Static<typeof ErrorModel>;

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

/** What failed, as Elysia's onError names it: its error code, or none for an error thrown by our own code. */
export type Failure = { code?: string | number; error: unknown; request: Request };

/**
 * Every failure of a request as its response: the app's onError (app.ts) and the hot routes (hot.ts) both answer
 * through this, so a request gets the same answer whichever path served it. `allowed` lists a path's methods
 * (for 405 on an unknown method); an unexpected error is logged with an id the response repeats.
 */
export function failureResponse({ code, error, request }: Failure, log: Logger, allowed: (path: string) => string[] = () => []): Response {
  if (error instanceof AppError) return fromAppError(error);
  // A response that fails its own model is the service's fault: it falls through to 500.
  if (code === "VALIDATION" && (error as ValidationFailure).type !== "response") {
    const failure = error as ValidationFailure;
    const part = failure.type === "body" ? "body" : "request";
    return errorResponse(400, `The ${part} does not have the expected shape.`, fieldErrors(failure));
  }
  if (code === "PARSE") return errorResponse(400, "The body is not valid JSON.");
  if (code === "NOT_FOUND") {
    const methods = allowed(splitUrl(request.url).path);
    if (methods.length) return errorResponse(405, `This path allows ${methods.join(", ")}.`, undefined, { allow: methods.join(", ") });
    return errorResponse(404, "No such path.");
  }
  const requestId = crypto.randomUUID();
  log.error("unexpected error", { requestId, method: request.method, path: splitUrl(request.url).path, error: String((error as Error)?.stack ?? error) });
  return errorResponse(500, `Unexpected error; request id ${requestId}.`);
}
