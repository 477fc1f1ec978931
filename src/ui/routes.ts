/**
 * The dashboard at /ui/ (README, Dashboard), answered by the server ahead of the API after one test of the path
 * (http/server.ts), not as Bun.serve `routes`: while any are set, every HTTP/1.1 request is slower
 * (docs/performance.md). The page needs no key (it asks for one and calls /v1 with it); every answer carries a
 * strict Content-Security-Policy. Paths under /ui/ that are not files are the app's own routes and get the page;
 * a missing file (a name with a dot) is a 404.
 */
import page from "./client/index.html";
import { loadAssets, type Asset, type Assets } from "./assets.ts";
import { errorResponse } from "../http/errors.ts";
import { splitUrl } from "../http/request-url.ts";
import type { Logger } from "../lib/log.ts";
import { portalHandler, type PortalOptions } from "./portal.ts";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

// The page is revalidated on every load so an upgraded binary is picked up; its files have content-hashed names.
const PAGE_CACHE = "no-cache";
const FILE_CACHE = "public, max-age=31536000, immutable";

/** `portal`: what the portal's pages (/portal/…, portal.ts) need to read their session; without it they are 404. */
export type UiOptions = { isStopping: () => boolean; log: Logger; portal?: Omit<PortalOptions, "log"> };
type Handler = (request: Request) => Response | Promise<Response>;

function answer(request: Request, asset: Asset, cache: string): Response {
  const gzip = asset.gzip && /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "") ? asset.gzip : undefined;
  // Each encoding is its own representation, so it has its own entity tag.
  const etag = gzip ? `${asset.etag.slice(0, -1)}-gz"` : asset.etag;
  const headers: Record<string, string> = { ...SECURITY_HEADERS, "content-type": asset.type, "cache-control": cache, etag, vary: "accept-encoding" };
  if (gzip) headers["content-encoding"] = "gzip";
  if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
  return new Response(request.method === "HEAD" ? null : (gzip ?? asset.body), { headers });
}

function notFound(): Response {
  return new Response("Not found. The dashboard is at /ui/.\n", { status: 404, headers: { ...SECURITY_HEADERS, "content-type": "text/plain;charset=utf-8" } });
}

/** The dashboard's handler, for requests to /ui and below and to the portal (http/server.ts `isUiPath`). */
export function uiHandler(options: UiOptions): Handler {
  let loading: Promise<Assets> | null = null;
  const assets = () => (loading ??= loadAssets(page).catch((error) => {
    loading = null;
    throw error;
  }));

  async function serveUi(request: Request): Promise<Response> {
    if (options.isStopping()) return errorResponse(503, "The service is shutting down.", undefined, { "retry-after": "5" });
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse(405, "The dashboard is read with GET.", undefined, { allow: "GET, HEAD" });
    }
    let loaded: Assets;
    try {
      loaded = await assets();
    } catch (error) {
      options.log.error("the dashboard could not be loaded", { error: String(error) });
      return errorResponse(500, "The dashboard could not be loaded.");
    }
    // splitUrl, not new URL: Bun leaves the URL relative when it cannot use the Host header.
    const name = splitUrl(request.url).path.slice("/ui/".length);
    const file = loaded.files.get(name);
    if (file) return answer(request, file, FILE_CACHE);
    if (name.slice(name.lastIndexOf("/") + 1).includes(".")) return notFound();
    return answer(request, loaded.index, PAGE_CACHE);
  }

  const portal = options.portal ? portalHandler({ ...options.portal, log: options.log }, assets) : null;

  return (request) => {
    const { path, search } = splitUrl(request.url);
    if (path.startsWith("/portal")) {
      if (options.isStopping()) return errorResponse(503, "The service is shutting down.", undefined, { "retry-after": "5" });
      return portal ? portal(request) : notFound();
    }
    if (path === "/ui") return new Response(null, { status: 308, headers: { ...SECURITY_HEADERS, location: `/ui/${search}` } });
    return serveUi(request);
  };
}
