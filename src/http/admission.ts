/**
 * The front door: the one order of the steps before a handler, which every entrance (the Elysia app, the hot
 * routes, the Idempotency-Key step in front of either) runs through `frontDoor`, so none can drift
 * (docs/api.md, "Admission"):
 *
 *   1. negotiate (negotiation.ts): 406 when Accept excludes JSON, 415 for a body that is not JSON, 413 for a
 *      declared length over the limit;
 *   2. bound the body (body.ts): read once, 413 past the limit (a body of no declared length as it is read),
 *      400 past the nesting depth;
 *   3. the gate (auth.ts), under /v1 but for the open paths: a locked address 403, authentication 401 (which
 *      counts toward the lockout), the key's rate limit 429;
 *   4. the entrance: the Idempotency-Key step when the request carries one, then the route parses and
 *      validates its input (400) and handles it;
 *   5. render: a failure of any step through `failureResponse`; from the gate on, the rate-limit headers go on
 *      every answer that does not set its own.
 */
import type { Deps } from "./context.ts";
import type { Auth, Gate } from "./auth.ts";
import { failureResponse } from "./errors.ts";
import { negotiate } from "./negotiation.ts";
import { boundedText, type CopyRequest } from "./body.ts";

/** A request past the gate, as an entrance sees it. */
export type Entry = {
  /** The request as the server handed it in; its body, if it had one, is read: `text` holds it. */
  request: Request;
  /** The body ("" without one); null when it was left unread (GET, HEAD, or none declared). */
  text: string | null;
  /** The admitted key; undefined on an open path. */
  auth?: Auth;
  /** The gate's headers (rate limit), which the front door puts on the answer; an entrance may set them first. */
  headers?: Record<string, string>;
  now: number;
};

/** What answers a request once it is admitted: a hot route, the app, or the Idempotency-Key step before them. */
export type Entrance = (entry: Entry) => Response | Promise<Response>;

/** Headers of the gate go on the answer unless the answer sets them itself (a 429 carries its own). */
export function withHeaders(response: Response, headers: Record<string, string>): Response {
  for (const name in headers) if (!response.headers.has(name)) response.headers.set(name, headers[name]!);
  return response;
}

/** A handler's value as its answer; `undefined` (a DELETE) is an empty body, which claims no content type. */
export function render(value: unknown, status: number, headers: Record<string, string> | undefined, pretty: boolean): Response {
  if (value === undefined) return new Response(null, { status, headers });
  return new Response(JSON.stringify(value, null, pretty ? 2 : undefined), { status, headers: { ...headers, "content-type": "application/json" } });
}

const admissions = new WeakMap<Request, Auth>();

/** The key admitted for a request the front door handed on (`forward`); context.ts gives it to the app's handlers. */
export const admittedAuth = (request: Request): Auth | undefined => admissions.get(request);

/** The request to hand to the app: a copy carrying the body already read, marked with the entry's key. */
export function forward(entry: Entry, copy: CopyRequest): Request {
  const { request, text } = entry;
  const next = text === null ? request : copy(request, { method: request.method, headers: request.headers, body: text === "" ? null : text });
  if (entry.auth) admissions.set(next, entry.auth);
  return next;
}

/** Whether a path needs a key: everything under /v1 but `open`. */
export const isGated = (path: string, open: ReadonlySet<string>) => (path === "/v1" || path.startsWith("/v1/")) && !open.has(path);

/** Returns `admit(request, path, entrance)`, which runs the steps above and answers with what `entrance` gives. */
export function frontDoor(deps: Deps, gate: Gate, open: ReadonlySet<string>) {
  return async function admit(request: Request, path: string, entrance: Entrance): Promise<Response> {
    const refused = negotiate(request);
    if (refused) return refused;
    let headers: Record<string, string> | undefined;
    try {
      const text = await boundedText(request);
      if (text instanceof Response) return text;
      const now = deps.clock.now();
      let auth: Auth | undefined;
      if (isGated(path, open)) ({ auth, headers } = await gate.admit(request, () => deps.peerAddress?.(request) ?? null, now));
      const response = await entrance({ request, text, auth, headers, now });
      return headers ? withHeaders(response, headers) : response;
    } catch (error) {
      const failure = failureResponse({ error, request }, deps.log);
      return headers ? withHeaders(failure, headers) : failure;
    }
  };
}
