/**
 * GET /metrics (no version prefix), answered before the API's content negotiation: Prometheus asks for text,
 * not JSON. Refusals are the API's JSON errors (401 with `WWW-Authenticate: Bearer`, 403, 405).
 */
import type { Config } from "../config.ts";
import { errorResponse, failureResponse } from "../http/errors.ts";
import type { Logger } from "../lib/log.ts";
import { splitUrl } from "../http/request-url.ts";
import { decideMetricsAccess } from "./access.ts";
import type { Metrics } from "./registry.ts";

export const METRICS_PATH = "/metrics";

export type EndpointDeps = {
  config: Pick<Config, "metricsToken" | "trustProxy">;
  metrics: Metrics;
  log: Logger;
  peerAddress?: (request: Request) => string | null | undefined;
};

/** A response for requests to /metrics, undefined for every other path. */
export function metricsEndpoint(deps: EndpointDeps): (request: Request) => Promise<Response> | Response | undefined {
  return (request) => {
    if (splitUrl(request.url).path !== METRICS_PATH) return undefined;
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse(405, "This path allows GET, HEAD.", undefined, { allow: "GET, HEAD" });
    }
    const decision = decideMetricsAccess({
      token: deps.config.metricsToken,
      authorization: request.headers.get("authorization"),
      peer: deps.peerAddress?.(request),
      forwardedFor: request.headers.get("x-forwarded-for"),
      trustProxy: deps.config.trustProxy,
    });
    if (!decision.allowed) {
      const headers = decision.status === 401 ? { "www-authenticate": 'Bearer realm="fanout metrics"' } : undefined;
      return errorResponse(decision.status, decision.detail, undefined, headers);
    }
    return deps.metrics.render().then(
      (text) => new Response(request.method === "HEAD" ? null : text, {
        headers: { "content-type": deps.metrics.contentType, "cache-control": "no-store" },
      }),
      (error) => failureResponse({ error, request }, deps.log),
    );
  };
}
