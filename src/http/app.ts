/**
 * The root Elysia app: negotiation before routing, one onError that renders every failure as
 * `{ title, status }`, `pretty` printing, and the modules under /v1.
 */
import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { AppError } from "../lib/errors.ts";
import { errorResponse, fromAppError, validationErrors } from "./errors.ts";
import { negotiate } from "./negotiation.ts";
import { splitUrl, wantsPretty } from "./request-url.ts";
import { routeTable } from "./routes-table.ts";
import { requestGate, type Deps } from "./context.ts";
import { eventRoutes } from "../modules/events/routes.ts";
import { queueRoutes } from "../modules/queues/routes.ts";
import { apiKeyRoutes } from "../modules/api-keys/routes.ts";
import { organizationRoutes } from "../modules/organizations/routes.ts";
import { listenerRoutes } from "../modules/listeners/routes.ts";
import { messageRoutes } from "../modules/messages/routes.ts";
import { schemaRoutes } from "../modules/schemas/routes.ts";

export type { Deps } from "./context.ts";

function render(value: unknown, request: Request, status: number, headers: Record<string, string>): Response {
  const body = value === undefined ? "" : JSON.stringify(value, null, wantsPretty(splitUrl(request.url).search) ? 2 : undefined);
  return new Response(body, { status, headers: { ...headers, "content-type": "application/json" } });
}

export function buildApp(deps: Deps) {
  let allowed: (path: string) => string[] = () => [];
  // normalize off: an unknown body field is a 400 (a typo like `notify_ur1` must not pass silently), and
  // responses must match their models exactly, which keeps the OpenAPI document honest.
  const app = new Elysia({ normalize: false })
    .onRequest(({ request }) => negotiate(request))
    .onError(({ code, error, request }) => {
      if (error instanceof AppError) return fromAppError(error);
      if (code === "VALIDATION") return errorResponse(400, "The request does not have the expected shape.", validationErrors(error.type, error.all as any));
      if (code === "PARSE") return errorResponse(400, "The body is not valid JSON.");
      if (code === "NOT_FOUND") {
        const methods = allowed(splitUrl(request.url).path);
        if (methods.length) return errorResponse(405, `This path allows ${methods.join(", ")}.`, undefined, { allow: methods.join(", ") });
        return errorResponse(404, "No such path.");
      }
      const requestId = crypto.randomUUID();
      deps.log.error("unexpected error", { requestId, method: request.method, path: splitUrl(request.url).path, error: String((error as Error)?.stack ?? error) });
      return errorResponse(500, `Unexpected error; request id ${requestId}.`);
    })
    .mapResponse(({ responseValue, request, set }) => {
      if (responseValue instanceof Response) return responseValue;
      return render(responseValue, request, typeof set.status === "number" ? set.status : 200, set.headers as Record<string, string>);
    })
    .get("/healthz", () => ({ status: "ok" }), { detail: { summary: "Liveness of the service (no key, no version prefix)" } })
    .use(
      openapi({
        path: "/v1/openapi",
        specPath: "/v1/openapi.json",
        provider: null,
        documentation: { info: { title: "fanout", version: deps.version, description: "Queue and message fan-out service" } },
        exclude: { paths: ["/healthz"] },
      }),
    )
    .group("/v1", (v1) => v1
      // Lockout, authentication and rate limit for every /v1 request, before routing; the API description stays open.
      .use(requestGate(deps, { open: ["/v1/openapi", "/v1/openapi.json"] }))
      .use(eventRoutes(deps))
      .use(queueRoutes(deps)).use(apiKeyRoutes(deps)).use(organizationRoutes(deps))
      .use(listenerRoutes(deps)).use(messageRoutes(deps)).use(schemaRoutes(deps)));
  allowed = routeTable(app.routes);
  return app;
}
