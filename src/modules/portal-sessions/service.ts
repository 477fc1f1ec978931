/**
 * Portal sessions (docs/portal.md): links an organization hands its customers. Keys that may write a queue's
 * listeners make, list and revoke its sessions; a portal token may read only its own session.
 */
import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireApiKey, requireScope, visibleTo } from "../../http/scopes.ts";
import { notFound } from "../../lib/errors.ts";
import { newPortalToken, sha256Hex } from "../../lib/ids.ts";
import type { Page, PortalSession } from "../../store/index.ts";
import { checkedSession, type PortalSessionCreate } from "./rules.ts";

/** Expired and revoked sessions are kept this long after they expire, so their page still shows the return link. */
export const PORTAL_SESSION_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export type PortalSessionStatus = "active" | "expired" | "revoked";

export function statusOf(s: PortalSession, now: number): PortalSessionStatus {
  if (s.revokedAt !== null) return "revoked";
  return s.expiresAt <= now ? "expired" : "active";
}

/** The token is made here and returned once; only its hash is stored. */
export async function createPortalSession(deps: Deps, auth: Auth, body: PortalSessionCreate, now: number) {
  requireApiKey(auth.key);
  requireScope(auth.key, "listeners", "write", [body.queue_id]);
  const token = newPortalToken();
  const input = { ...checkedSession(body, now), tokenHash: sha256Hex(token) };
  return { session: await deps.store.portalSessions.create(auth.orgId, input, now, auth.actor), token };
}

/** The sessions of the queues whose listeners the key may write. */
export async function listPortalSessions(deps: Deps, auth: Auth, page: Page) {
  requireApiKey(auth.key);
  return deps.store.portalSessions.list(auth.orgId, visibleTo(auth.key, "listeners", "write"), page);
}

/** A portal token reads its own session (the portal page does, to learn its queue); any other id is unknown to it. */
export async function getPortalSession(deps: Deps, auth: Auth, id: string): Promise<PortalSession> {
  if (auth.key.portal && auth.key.portal.sessionId !== id) throw notFound("The portal session");
  const session = await deps.store.portalSessions.get(auth.orgId, id);
  if (!auth.key.portal) requireScope(auth.key, "listeners", "write", [session.queueId]);
  return session;
}

/** Revoked at once: its token is refused from the next request on. */
export async function revokePortalSession(deps: Deps, auth: Auth, id: string, now: number): Promise<void> {
  requireApiKey(auth.key);
  const session = await deps.store.portalSessions.get(auth.orgId, id);
  requireScope(auth.key, "listeners", "write", [session.queueId]);
  await deps.store.portalSessions.revoke(auth.orgId, id, now, auth.actor);
}
