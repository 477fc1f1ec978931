/**
 * What every API route sees: the dependencies, and per request the key the front door admitted (admission.ts),
 * the origin for links and the time.
 */
import { Elysia } from "elysia";
import type { Store } from "../store/index.ts";
import type { Config } from "../config.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import type { Metrics } from "../metrics/registry.ts";
import { originOf } from "./links.ts";
import { admittedAuth } from "./admission.ts";
import type { CopyRequest } from "./body.ts";

export type Deps = {
  store: Store;
  config: Config;
  clock: Clock;
  log: Logger;
  version: string;
  /** Counts for /metrics; absent in tests that do not look at them. */
  metrics?: Metrics;
  /** Wakes the delivery worker after a publish commits; polling stays the safety net. */
  nudge: () => void;
  /**
   * The socket peer address of a request (`server.requestIP`), for lockout. Must be read from the request Bun
   * handed to `fetch`: a rewritten copy has no socket. Without it, and without a trusted X-Forwarded-For, every
   * client is counted as one address "unknown", which fails closed (locks everyone) rather than open.
   */
  peerAddress?: (request: Request) => string | null | undefined;
  /** Makes a copy of a request that `peerAddress` still traces to its socket (a body read and checked: body.ts). */
  copyRequest?: CopyRequest;
};

export function apiContext(deps: Deps) {
  return new Elysia().derive({ as: "scoped" }, ({ request }) => {
    const auth = admittedAuth(request);
    // Every request reaches the app through the front door (buildHandler); one that did not must not be served.
    if (!auth) throw new Error("a request reached an API route without passing the front door (admission.ts)");
    return { auth, origin: originOf(request, deps.config.baseUrl), now: deps.clock.now() };
  });
}
