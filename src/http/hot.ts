/**
 * Hot routes: the request the service answers most (publishing a message) is served without Elysia's pipeline,
 * by this one, which runs the app's steps in the app's order with the app's pieces:
 *   negotiate (406, 413, 415) → the gate (403, 401, 429, rate-limit headers) → parse the JSON body (400) →
 *   check it against the route's TypeBox model (400 with the same `errors`) → the route's handler → JSON.
 * Every failure is rendered by `failureResponse`, as the app's onError renders it, and after the gate the
 * rate-limit headers go on every answer, as Elysia merges them. The route stays declared in the app too: it is
 * documented there (OpenAPI) and serves whatever a hot route does not take (a query string such as `?pretty`, a
 * path that is not exactly the pattern). hot.test.ts sends the same requests both ways and compares the answers.
 *
 * Why: Elysia's per-request work (context, hooks, derive, response mapping and validation) runs on the API
 * thread, the one ingest waits for (docs/performance.md, "The hot route").
 */
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValidationError } from "elysia";
import type { Deps } from "./context.ts";
import type { Auth, Gate } from "./auth.ts";
import { failureResponse } from "./errors.ts";
import { negotiate } from "./negotiation.ts";
import { refuseBody } from "./body.ts";
import { originOf } from "./links.ts";
import { splitUrl } from "./request-url.ts";

export type HotContext<B> = { auth: Auth; params: Record<string, string>; body: B; origin: string; now: number };

export type HotRoute<B = any> = {
  method: string;
  /** Segments; `:name` matches one segment of letters, digits, `_` or `-` (ids need no decoding). */
  path: string;
  body: TSchema;
  /** The body when the request has none (as `jsonOrEmpty` gives the app's route). */
  empty: B;
  handle(ctx: HotContext<B>): Promise<unknown>;
};

type Compiled = { route: HotRoute; segments: string[]; check: TypeCheck<TSchema> };

const SEGMENT = /^[A-Za-z0-9_-]+$/;

function match(segments: string[], path: string): Record<string, string> | null {
  const parts = path.split("/");
  if (parts.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const want = segments[i]!;
    const part = parts[i]!;
    if (want.startsWith(":")) {
      if (!SEGMENT.test(part)) return null;
      params[want.slice(1)] = part;
    } else if (want !== part) return null;
  }
  return params;
}

/** Headers set by the gate go on the answer unless the answer sets them itself (a 429 carries its own). */
export function withHeaders(response: Response, headers: Record<string, string>): Response {
  for (const [name, value] of Object.entries(headers)) if (!response.headers.has(name)) response.headers.set(name, value);
  return response;
}

/** Returns the handler: a response (or its promise) for a request a hot route takes, undefined for the rest. */
export function hotRoutes(deps: Deps, gate: Gate, routes: HotRoute[]) {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: route.path.split("/"), check: TypeCompiler.Compile(route.body) }));

  async function serve({ route, check }: Compiled, params: Record<string, string>, request: Request): Promise<Response> {
    const refused = negotiate(request);
    if (refused) return refused;
    let headers: Record<string, string> = {};
    try {
      const now = deps.clock.now();
      const admitted = await gate.admit(request, () => deps.peerAddress?.(request) ?? null, now);
      headers = admitted.headers;
      const text = await request.text();
      const badBody = refuseBody(text);
      if (badBody) return withHeaders(badBody, headers);
      let body: unknown;
      try {
        body = text === "" ? route.empty : JSON.parse(text);
      } catch (error) {
        return withHeaders(failureResponse({ code: "PARSE", error, request }, deps.log), headers);
      }
      if (!check.Check(body)) {
        const error = new ValidationError("body", check, body);
        return withHeaders(failureResponse({ code: "VALIDATION", error, request }, deps.log), headers);
      }
      const value = await route.handle({ auth: admitted.auth, params, body, origin: originOf(request, deps.config.baseUrl), now });
      return new Response(JSON.stringify(value), { status: 200, headers: { ...headers, "content-type": "application/json" } });
    } catch (error) {
      return withHeaders(failureResponse({ error, request }, deps.log), headers);
    }
  }

  return (request: Request): Promise<Response> | undefined => {
    const { path, search } = splitUrl(request.url);
    if (search !== "") return undefined;
    for (const c of compiled) {
      if (c.route.method !== request.method) continue;
      const params = match(c.segments, path);
      if (params) return serve(c, params, request);
    }
    return undefined;
  };
}
