import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { emptyOk, refusals } from "../../http/openapi.ts";
import { itemLinks, link } from "../../http/links.ts";
import { PagingQuery, pageOf, pagingHeaders } from "../../http/paging.ts";
import { Query } from "../shared-model.ts";
import type { PortalSession } from "../../store/index.ts";
import * as m from "./model.ts";
import * as service from "./service.ts";

const tags = ["portal_sessions"];
const sessionPath = (id: string) => `/portal_sessions/${id}`;

const itemOf = (s: PortalSession, now: number) => ({
  id: s.id,
  queue_id: s.queueId,
  queue_name: s.queueName,
  listener_ids: s.listenerIds,
  can_manage: s.canManage,
  status: service.statusOf(s, now),
  created_at: s.createdAt,
  expires_at: s.expiresAt,
  revoked_at: s.revokedAt,
  allowed_origins: s.allowedOrigins,
  branding: { name: s.branding.name, logo_url: s.branding.logoUrl, accent: s.branding.accent },
  return_url: s.returnUrl,
});

const sessionLinks = (origin: string, s: PortalSession) => ({ self: link(origin, sessionPath(s.id)), queue: link(origin, `/queues/${s.queueId}`) });

/** The portal's address: the session's id in the path, the token in the fragment, which no server, proxy or Referer sees. */
const portalUrl = (origin: string, s: PortalSession, token: string) => `${origin}/portal/${s.id}#${token}`;

export function portalSessionRoutes(deps: Deps) {
  return moduleRoutes("portal_sessions")
    .use(apiContext(deps))
    .post(
      "/portal_sessions",
      async ({ auth, body, origin, now, set }) => {
        const { session, token } = await service.createPortalSession(deps, auth, body, now);
        set.status = 201;
        return { portal_session: { ...itemOf(session, now), url: portalUrl(origin, session, token) }, _links: sessionLinks(origin, session) };
      },
      {
        query: Query(), body: m.PortalSessionCreateBody, response: { 201: m.PortalSessionCreatedResponse },
        detail: {
          summary: "Make a portal link for a customer: the listeners of one queue, for a while; the token is in `url`, shown only here",
          tags, responses: refusals(422),
        },
      },
    )
    .get(
      "/portal_sessions",
      async ({ auth, query, origin, request, set, now }) => {
        const page = pageOf(query);
        const { items, total } = await service.listPortalSessions(deps, auth, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        return { portal_sessions: items.map((s) => itemOf(s, now)), _links: itemLinks(origin, "/portal_sessions", items.map((s) => ({ id: s.id, name: null })), sessionPath) };
      },
      { query: Query(PagingQuery), response: m.PortalSessionListResponse, detail: { summary: "List portal sessions (never their tokens)", tags } },
    )
    .get(
      "/portal_sessions/:portal_session_id",
      async ({ auth, params, origin, now }) => {
        const session = await service.getPortalSession(deps, auth, params.portal_session_id);
        return { portal_session: itemOf(session, now), _links: sessionLinks(origin, session) };
      },
      {
        params: m.PortalSessionParams, query: Query(), response: m.PortalSessionResponse,
        detail: { summary: "Get a portal session (a portal token may read its own)", tags },
      },
    )
    .delete(
      "/portal_sessions/:portal_session_id",
      async ({ auth, params, now }) => {
        await service.revokePortalSession(deps, auth, params.portal_session_id, now);
        return undefined;
      },
      {
        params: m.PortalSessionParams, query: Query(),
        detail: { summary: "Revoke a portal session at once; it stays listed, revoked, until it is swept", tags, responses: emptyOk("Revoked; the body is empty") },
      },
    );
}
