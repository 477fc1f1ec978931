/**
 * What every API route sees: the dependencies, and per request the authenticated key, the origin for links and
 * the time.
 *
 * `requestGate` (used once, inside /v1) runs the gate of auth.ts as a request hook, before routing and body
 * parsing: so a locked address gets 403 on every path, an unauthenticated request is 401 whatever its body, and
 * the rate-limit headers sit in `set.headers`, which Elysia merges into every response, errors from onError
 * included. `apiContext` (used by each module) then picks up the admitted key instead of looking it up again.
 */
import { Elysia } from "elysia";
import type { Store } from "../store/index.ts";
import type { Config } from "../config.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import type { Metrics } from "../metrics/registry.ts";
import { authenticate, type Auth, type Gate } from "./auth.ts";
import { originOf } from "./links.ts";
import { splitUrl } from "./request-url.ts";
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

/** Per request, the key the gate admitted; a WeakMap so it goes away with the request. */
const admitted = new WeakMap<Request, Auth>();

const isGated = (path: string, open: ReadonlySet<string>) => (path === "/v1" || path.startsWith("/v1/")) && !open.has(path);

/**
 * `open`: paths under /v1 served without a key (the API description). The gate is made by the caller, because the
 * hot routes (hot.ts) must count against the same lockout and rate limits.
 */
export function requestGate(deps: Deps, gate: Gate, options: { open?: string[] } = {}) {
  const open = new Set(options.open ?? []);
  // A request hook runs before routing, for every request the app gets whatever its path: hence the path test.
  return new Elysia().onRequest(async ({ request, set }) => {
    if (!isGated(splitUrl(request.url).path, open)) return;
    const result = await gate.admit(request, () => deps.peerAddress?.(request) ?? null, deps.clock.now());
    Object.assign(set.headers, result.headers);
    admitted.set(request, result.auth);
  });
}

export function apiContext(deps: Deps) {
  return new Elysia().derive({ as: "scoped" }, async ({ request }) => {
    // The fallback serves a module mounted without the gate (a unit test); the app always has the gate.
    const auth = admitted.get(request) ?? (await authenticate(deps.store, request.headers.get("x-api-key")));
    return { auth, origin: originOf(request, deps.config.baseUrl), now: deps.clock.now() };
  });
}
