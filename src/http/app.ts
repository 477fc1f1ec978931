/**
 * The root Elysia app: negotiation before routing, one onError that renders every failure as
 * `{ title, status }`, `pretty` printing, and the modules under /v1. `buildHandler` puts the hot routes
 * (hot.ts) in front of it for the server.
 */
import { Elysia, t } from "elysia";
import { failureResponse } from "./errors.ts";
import { negotiate } from "./negotiation.ts";
import { splitUrl, wantsPretty } from "./request-url.ts";
import { routeTable } from "./routes-table.ts";
import { requestGate, type Deps } from "./context.ts";
import { eventRoutes } from "../modules/events/routes.ts";
import { queueRoutes } from "../modules/queues/routes.ts";
import { apiKeyRoutes } from "../modules/api-keys/routes.ts";
import { organizationRoutes } from "../modules/organizations/routes.ts";
import { listenerRoutes } from "../modules/listeners/routes.ts";
import { hotPublishRoute, messageRoutes } from "../modules/messages/routes.ts";
import { schemaRoutes } from "../modules/schemas/routes.ts";
import { QueueCache } from "../modules/messages/queue-cache.ts";
import { createGate, type Gate } from "./auth.ts";
import { hotRoutes } from "./hot.ts";
import { idempotentRequests } from "./idempotency.ts";
import { checkedBody } from "./body.ts";
import { openapiDocument } from "./openapi.ts";
import { readinessRoute } from "./readiness.ts";
import { originOf } from "./links.ts";
import { METRICS_PATH, metricsEndpoint } from "../metrics/endpoint.ts";
import { routeLabels } from "../metrics/requests.ts";

export type { Deps } from "./context.ts";

/** A handler's value as JSON; `undefined` (a DELETE) is an empty body, which claims no content type. */
function render(value: unknown, request: Request, status: number, headers: Record<string, string>): Response {
  if (value === undefined) return new Response(null, { status, headers });
  const body = JSON.stringify(value, null, wantsPretty(splitUrl(request.url).search) ? 2 : undefined);
  return new Response(body, { status, headers: { ...headers, "content-type": "application/json" } });
}

/** What the app and its hot routes share: one gate (lockout and rate-limit counters) and one queue cache. */
export type Shared = { gate: Gate; queues: QueueCache };

/** Paths under /v1 served without a key: the API description. */
const OPEN_PATHS = ["/v1/openapi.json"];

export const sharedOf = (deps: Deps): Shared => ({ gate: createGate(deps), queues: new QueueCache(deps.store) });

export function buildApp(deps: Deps, shared: Shared = sharedOf(deps)) {
  let allowed: (path: string) => string[] = () => [];
  let document: (origin: string) => unknown = () => ({});
  // normalize off: an unknown body field is a 400 (a typo like `notify_ur1` must not pass silently), and
  // responses must match their models exactly, which keeps the OpenAPI document honest.
  const app = new Elysia({ normalize: false })
    .onRequest(({ request }) => negotiate(request))
    .onError(({ code, error, request }) => failureResponse({ code, error, request }, deps.log, allowed))
    .mapResponse(({ responseValue, request, set }) => {
      if (responseValue instanceof Response) return responseValue;
      return render(responseValue, request, typeof set.status === "number" ? set.status : 200, set.headers as Record<string, string>);
    })
    .get("/healthz", () => ({ status: "ok" as const }), {
      response: t.Object({ status: t.Literal("ok") }),
      detail: { summary: "Liveness of the service (no key, no version prefix)", tags: ["service"] },
    })
    .use(readinessRoute(deps))
    .get("/v1/openapi.json", ({ request }) => document(originOf(request, deps.config.baseUrl)), { detail: { hide: true } })
    .group("/v1", (v1) => v1
      // Lockout, authentication and rate limit for every /v1 request, before routing; the API description stays open.
      .use(requestGate(deps, shared.gate, { open: OPEN_PATHS }))
      .use(eventRoutes(deps))
      .use(queueRoutes(deps)).use(apiKeyRoutes(deps)).use(organizationRoutes(deps))
      .use(listenerRoutes(deps)).use(messageRoutes(deps, shared.queues)).use(schemaRoutes(deps)));
  allowed = routeTable(app.routes);
  document = openapiDocument(app, { title: "fanout", version: deps.version, description: "Queue and message fan-out service" });
  return app;
}

type Handler = (request: Request) => Response | Promise<Response>;

/**
 * What the server calls for each request: /metrics first (not JSON, so before negotiation), then writes with an
 * Idempotency-Key (idempotency.ts, which runs them through the two below), then the hot routes (hot.ts) take the
 * requests they are sure of, the app the rest. They all share one gate and one queue cache. Every request,
 * whichever answers it, is counted once, here, by the pattern of the route that serves it.
 */
export function buildHandler(deps: Deps): Handler {
  const shared = sharedOf(deps);
  const app = buildApp(deps, shared);
  const hot = hotRoutes(deps, shared.gate, [hotPublishRoute(deps, shared.queues)]);
  // The app parses bodies in several ways (Elysia's parsers, jsonOrEmpty): each sees a body already bounded.
  // Headers are judged first, so a declared body over the limit is never read; one without a declared length
  // fails while it is read (negotiation.ts), and that failure is its answer.
  const bounded = async (request: Request) => {
    const refused = negotiate(request);
    if (refused) return refused;
    try {
      const checked = await checkedBody(request, deps.copyRequest);
      return checked instanceof Response ? checked : app.fetch(checked);
    } catch (error) {
      return failureResponse({ error, request }, deps.log);
    }
  };
  const idempotent = idempotentRequests(deps, shared.gate, (checked) => hot(checked) ?? app.fetch(checked), new Set(OPEN_PATHS));
  const api = (request: Request) => idempotent(request) ?? hot(request) ?? bounded(request);
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
