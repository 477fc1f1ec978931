/**
 * What every API route sees: the dependencies, and per request the authenticated key, the origin for links and
 * the time. `derive` runs before body validation, so an unauthenticated request is 401 whatever its body.
 */
import { Elysia } from "elysia";
import type { Store } from "../store/index.ts";
import type { Config } from "../config.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import { authenticate } from "./auth.ts";
import { originOf } from "./links.ts";

export type Deps = {
  store: Store;
  config: Config;
  clock: Clock;
  log: Logger;
  version: string;
  /** Wakes the delivery worker after a publish commits; polling stays the safety net. */
  nudge: () => void;
};

export function apiContext(deps: Deps) {
  return new Elysia().derive({ as: "scoped" }, async ({ request }) => {
    const auth = await authenticate(deps.store, request.headers.get("x-api-key"));
    return { auth, origin: originOf(request, deps.config.baseUrl), now: deps.clock.now() };
  });
}
