/**
 * Bun.serve around the Elysia app: HTTP/1.1 and HTTP/2 on one TLS port by ALPN (or plain HTTP/1.1 and h2c with
 * --no-tls). Paths without /v1 are served as v1 (docs/api.md), and hosts too short for Elysia's router are routed
 * under a stand-in origin (request-url.ts), by rewriting the request before routing.
 */
import type { Server } from "bun";
import { errorResponse } from "./errors.ts";
import { readdressed, splitUrl, SHORTEST_ROUTABLE_ORIGIN } from "./request-url.ts";
import { notReady, READY_PATH } from "./readiness.ts";
import type { Logger } from "../lib/log.ts";

export type Tls = { cert: string; key: string } | null;
/**
 * `originals` maps a request rewritten here (version prefix, short host) to the one Bun handed in: only that one knows its
 * socket (`server.requestIP`, for lockout), and the address is looked up only when needed (auth.ts).
 */
export type ServerOptions = {
  host: string; port: number; tls: Tls; isStopping: () => boolean; log: Logger; originals?: WeakMap<Request, Request>;
  /** The dashboard, for /ui and the paths below it, and the portal's pages (answered before the API's routing). */
  ui?: Fetch;
};
type Fetch = (request: Request) => Response | Promise<Response>;

const UNVERSIONED = new Set(["/healthz", READY_PATH, "/metrics"]);

export function routable(request: Request): Request {
  const { origin, path, search } = splitUrl(request.url);
  const versioned = path === "/v1" || path.startsWith("/v1/") || UNVERSIONED.has(path);
  if (versioned && origin.length >= SHORTEST_ROUTABLE_ORIGIN) return request;
  return readdressed(request, origin, `${versioned ? path : `/v1${path === "/" ? "" : path}`}${search}`);
}

/**
 * /ui, /ui/… or /ui?…, and the portal's /portal/…, read off an absolute URL without parsing it (the API's
 * requests pass here too).
 */
export function isUiPath(url: string): boolean {
  const at = url.indexOf("/", url.indexOf("://") + 3);
  if (at < 0) return false;
  if (url.startsWith("/portal/", at)) return true;
  if (!url.startsWith("/ui", at)) return false;
  const next = url.charCodeAt(at + 3);
  return Number.isNaN(next) || next === 47 || next === 63; // end, "/" or "?"
}

export function serve(fetch: Fetch, options: ServerOptions): Server<undefined> {
  return Bun.serve({
    hostname: options.host,
    port: options.port,
    // Bun answers a body over this itself, without JSON; the front door bounds bodies (1 MiB) and answers in JSON.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    ...(options.tls ? { tls: options.tls, http2: true } : { http2: true }),
    fetch(request: Request) {
      if (options.isStopping()) {
        const detail = "The service is shutting down.";
        return splitUrl(request.url).path === READY_PATH ? notReady(detail) : errorResponse(503, detail, undefined, { "retry-after": "5" });
      }
      // Bun leaves the URL relative when it cannot use the Host header, and keeps a port out of range or not a
      // number (`example.com:65536`) in a URL nothing can parse; links and request copies need one that parses.
      if (!URL.canParse(request.url)) return errorResponse(400, "The Host header is not a usable host name and port.");
      if (options.ui && isUiPath(request.url)) return options.ui(request);
      const routed = routable(request);
      if (routed !== request) options.originals?.set(routed, request);
      return fetch(routed);
    },
    // Reached only by a failure outside the Elysia app (which renders its own errors): log it, answer JSON.
    error(error: Error) {
      const requestId = crypto.randomUUID();
      options.log.error("unexpected error outside the app", { requestId, error: String(error?.stack ?? error) });
      return errorResponse(500, `Unexpected error; request id ${requestId}.`);
    },
  } as any);
}
