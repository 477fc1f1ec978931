/**
 * Hot routes: the request the service answers most (publishing a message) is served without Elysia's pipeline.
 * It passes the same front door as every request (admission.ts); a hot route is only the entrance behind it:
 * parse the JSON body (400), check it against the route's TypeBox model (400 with the same `errors` as the app),
 * run the route's handler, render its value as the app renders it. The route stays declared in the app too: it
 * is documented there (OpenAPI) and serves whatever a hot route does not take (a query string such as
 * `?pretty`, a path that is not exactly the pattern). hot.test.ts sends the same requests both ways through
 * the server's handler and compares the answers.
 *
 * Why: Elysia's per-request work (context, hooks, derive, response mapping and validation) runs on the API
 * thread, the one ingest waits for (docs/performance.md, "The hot route").
 */
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValidationError } from "elysia";
import type { Deps } from "./context.ts";
import type { Auth } from "./auth.ts";
import { failureResponse } from "./errors.ts";
import { originOf } from "./links.ts";
import { render, type Entrance, type Entry } from "./admission.ts";

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

/** Parse, validate, handle, render: what the app does after admission, for one route, without Elysia. */
async function serve(deps: Deps, { route, check }: Compiled, params: Record<string, string>, { request, text, auth, headers, now }: Entry): Promise<Response> {
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : route.empty;
  } catch (error) {
    return failureResponse({ code: "PARSE", error, request }, deps.log);
  }
  if (!check.Check(body)) return failureResponse({ code: "VALIDATION", error: new ValidationError("body", check, body), request }, deps.log);
  const value = await route.handle({ auth: auth!, params, body, origin: originOf(request, deps.config.baseUrl), now });
  return render(value, 200, headers, false);
}

/**
 * Returns the matcher: the entrance of the hot route that takes a request (its method, its path exactly, no query
 * string), undefined for the rest. Every hot route is under /v1, so the front door has admitted a key.
 */
export function hotRoutes(deps: Deps, routes: HotRoute[]) {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: route.path.split("/"), check: TypeCompiler.Compile(route.body) }));
  return (request: Request, path: string, search: string): Entrance | undefined => {
    if (search !== "") return undefined;
    for (const c of compiled) {
      if (c.route.method !== request.method) continue;
      const params = match(c.segments, path);
      if (params) return (entry) => serve(deps, c, params, entry);
    }
    return undefined;
  };
}
