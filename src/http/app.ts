/**
 * The root Elysia app: one onError that renders every failure as `{ title, status }`, `pretty` printing, and the
 * modules under /v1. It serves nothing by itself: `buildHandler` puts the front door (admission.ts) and the hot
 * routes (hot.ts) in front of it, and is what the server calls.
 */
import { Elysia, t } from "elysia";
import { failureResponse } from "./errors.ts";
import { splitUrl, wantsPretty } from "./request-url.ts";
import { routeTable } from "./routes-table.ts";
import type { Deps } from "./context.ts";
import { eventRoutes } from "../modules/events/routes.ts";
import { queueRoutes } from "../modules/queues/routes.ts";
import { apiKeyRoutes } from "../modules/api-keys/routes.ts";
import { organizationRoutes } from "../modules/organizations/routes.ts";
import { listenerRoutes } from "../modules/listeners/routes.ts";
import { hotPublishRoute, messageRoutes } from "../modules/messages/routes.ts";
import { schemaRoutes } from "../modules/schemas/routes.ts";
import { portalSessionRoutes } from "../modules/portal-sessions/routes.ts";
import { QueueCache } from "../modules/messages/queue-cache.ts";
import { createGate, type Gate } from "./auth.ts";
import { hotRoutes } from "./hot.ts";
import { idempotencyStep } from "./idempotency.ts";
import { forward, frontDoor, render, type Entrance } from "./admission.ts";
import { plainCopy } from "./body.ts";
import { openapiDocument } from "./openapi.ts";
import { readinessRoute } from "./readiness.ts";
import { originOf } from "./links.ts";
import { METRICS_PATH, metricsEndpoint } from "../metrics/endpoint.ts";
import { routeLabels } from "../metrics/requests.ts";

export type { Deps } from "./context.ts";

/** What the app and its hot routes share: one gate (lockout and rate-limit counters) and one queue cache. */
export type Shared = { gate: Gate; queues: QueueCache };

/** Paths under /v1 served without a key: the API description. */
const OPEN_PATHS = new Set(["/v1/openapi.json"]);

export const sharedOf = (deps: Deps): Shared => ({ gate: createGate(deps), queues: new QueueCache(deps.store) });

export function buildApp(deps: Deps, shared: Shared = sharedOf(deps)) {
  let allowed: (path: string) => string[] = () => [];
  let document: (origin: string) => unknown = () => ({});
  // normalize off: an unknown body field is a 400 (a typo like `notify_ur1` must not pass silently), and
  // responses must match their models exactly, which keeps the OpenAPI document honest.
  const app = new Elysia({ normalize: false })
    .onError(({ code, error, request }) => failureResponse({ code, error, request }, deps.log, allowed))
    .mapResponse(({ responseValue, request, set }) => {
      if (responseValue instanceof Response) return responseValue;
      const status = typeof set.status === "number" ? set.status : 200;
      return render(responseValue, status, set.headers as Record<string, string>, wantsPretty(splitUrl(request.url).search));
    })
    .get("/healthz", () => ({ status: "ok" as const }), {
      response: t.Object({ status: t.Literal("ok") }),
      detail: { summary: "Liveness of the service (no key, no version prefix)", tags: ["service"] },
    })
    .use(readinessRoute(deps))
    .get("/v1/openapi.json", ({ request }) => document(originOf(request, deps.config.baseUrl)), { detail: { hide: true } })
    .group("/v1", (v1) => v1
      .use(eventRoutes(deps))
      .use(queueRoutes(deps)).use(apiKeyRoutes(deps)).use(organizationRoutes(deps))
      .use(listenerRoutes(deps)).use(messageRoutes(deps, shared.queues)).use(schemaRoutes(deps)).use(portalSessionRoutes(deps)));
  allowed = routeTable(app.routes);
  document = openapiDocument(app, { title: "fanout", version: deps.version, description: "Queue and message fan-out service" });
  return app;
}

type Handler = (request: Request) => Response | Promise<Response>;

/**
 * What the server calls for each request: /metrics first (not JSON, so before the front door), then every other
 * request through the front door (admission.ts) to its entrance: the hot route that takes it exactly, else the
 * app; a write carrying an Idempotency-Key passes that step (idempotency.ts) before either. Every request,
 * whichever answers it, is counted once, here, by the pattern of the route that serves it.
 */
export function buildHandler(deps: Deps): Handler {
  const shared = sharedOf(deps);
  const app = buildApp(deps, shared);
  const admit = frontDoor(deps, shared.gate, OPEN_PATHS);
  const hot = hotRoutes(deps, [hotPublishRoute(deps, shared.queues)]);
  const idempotent = idempotencyStep(deps, OPEN_PATHS);
  const copy = deps.copyRequest ?? plainCopy;
  const elysia: Entrance = (entry) => app.fetch(forward(entry, copy));
  const api = (request: Request) => {
    const { path, search } = splitUrl(request.url);
    const route = hot(request, path, search) ?? elysia;
    return admit(request, path, idempotent(request, path, route) ?? route);
  };
  const { metrics } = deps;
  if (!metrics) return api;
  const scrape = metricsEndpoint({ ...deps, metrics });
  return counted((request) => scrape(request) ?? api(request), metrics, [...app.routes.map((r) => r.path), METRICS_PATH]);
}

/** A few hundred nanoseconds a request: two clock reads, the path's pattern, a few map updates (metrics/requests.ts). */
function counted(handle: Handler, metrics: NonNullable<Deps["metrics"]>, patterns: string[]): Handler {
  const routeOf = routeLabels(patterns);
  return (request) => {
    const started = performance.now();
    const record = (status: number) =>
      metrics.requests.record(request.method, routeOf(splitUrl(request.url).path), status, (performance.now() - started) / 1000);
    const response = handle(request);
    if (!(response instanceof Promise)) return record(response.status), response;
    return response.then((r) => (record(r.status), r), (error) => {
      record(500); // the server's error handler answers it (server.ts)
      throw error;
    });
  };
}
