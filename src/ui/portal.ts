/**
 * The portal (docs/portal.md) at /portal/<session id>: the dashboard's page in portal mode, framed by the
 * organization's own site. The page is the dashboard's (its script sees the path and runs the portal); what
 * differs is the policy it is sent with: `frame-ancestors` lists the session's allowed origins, and only while
 * the session is active (`'none'` otherwise, and without any), logos may come from https or data: URLs, and no
 * X-Frame-Options (it would forbid every frame). The page carries no secret: the token stays in the URL's
 * fragment and the frame's sessionStorage.
 *
 * /portal/<id>/session is the one thing the page reads without the token: the session's state, branding and
 * return link, so an ended session can still show a clear page with the way back. Nothing in it is secret.
 */
import type { Assets } from "./assets.ts";
import type { Store, PortalSession } from "../store/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import { errorResponse, fromAppError } from "../http/errors.ts";
import { AppError } from "../lib/errors.ts";
import { splitUrl } from "../http/request-url.ts";
import { statusOf } from "../modules/portal-sessions/service.ts";

export type PortalOptions = { store: Store; clock: Clock; log: Logger };

const policy = (ancestors: string) => [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  `frame-ancestors ${ancestors}`,
].join("; ");

const HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
  // Each answer depends on the session's state now: nothing may answer from a cache.
  "cache-control": "no-store",
};

/** `/portal/<id>` or a path below it: the id, and the rest ("" for the page itself). */
function parse(path: string): { id: string; rest: string } | null {
  const m = /^\/portal\/([^/]+)(\/.*)?$/.exec(path);
  // Ids are plain ASCII: a segment that needs decoding names no session, and is not decoded.
  if (!m || !/^[\w-]{1,64}$/.test(m[1]!)) return null;
  return { id: m[1]!, rest: m[2] ?? "" };
}

const frameAncestors = (s: PortalSession | null, now: number) =>
  s && statusOf(s, now) === "active" && s.allowedOrigins.length ? s.allowedOrigins.join(" ") : "'none'";

function sessionView(s: PortalSession, now: number) {
  const { name, logoUrl, accent } = s.branding;
  return { status: statusOf(s, now), branding: { name, logo_url: logoUrl, accent }, return_url: s.returnUrl };
}

/** The portal's requests, for paths under /portal/ (http/server.ts `isPortalPath`). `assets` is the dashboard's bundle. */
export function portalHandler(options: PortalOptions, assets: () => Promise<Assets>) {

  return async (request: Request): Promise<Response> => {
    try {
      return await answer(request);
    } catch (error) {
      if (error instanceof AppError) return fromAppError(error); // the database unavailable: 503 with Retry-After
      options.log.error("the portal page could not be answered", { error: String(error) });
      return errorResponse(500, "The portal could not be loaded.");
    }
  };

  async function answer(request: Request): Promise<Response> {
    if (request.method !== "GET" && request.method !== "HEAD") return errorResponse(405, "The portal is read with GET.", undefined, { allow: "GET, HEAD" });
    const where = parse(splitUrl(request.url).path);
    if (!where || (where.rest !== "" && where.rest.slice(where.rest.lastIndexOf("/") + 1).includes("."))) {
      return errorResponse(404, "There is no such page in the portal.", undefined, { ...HEADERS, "content-security-policy": policy("'none'") });
    }
    const session = await options.store.portalSessions.find(where.id);
    const now = options.clock.now();
    if (where.rest === "/session") {
      const headers = { ...HEADERS, "content-security-policy": "default-src 'none'; frame-ancestors 'none'" };
      if (!session) return errorResponse(404, "The portal session does not exist.", undefined, headers);
      const body = request.method === "HEAD" ? null : JSON.stringify(sessionView(session, now));
      return new Response(body, { headers: { ...headers, "content-type": "application/json" } });
    }
    const page = (await assets()).index;
    const headers = { ...HEADERS, "content-type": page.type, "content-security-policy": policy(frameAncestors(session, now)) };
    return new Response(request.method === "HEAD" ? null : page.body, { headers });
  }
}
