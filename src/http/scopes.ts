/**
 * Scope rules (docs/api.md, Keys and scopes). Write includes read. A target is `*`, an item's own id, or, for
 * listeners, messages and schemas, the id of their queue. A request outside the key's scopes is 403.
 *
 * A portal token (docs/portal.md) is checked by the same functions: its credential holds the listeners scope on
 * its queue (write only when it may manage) and a `portal` grant that narrows every check to the listeners the
 * session reaches. It holds no other scope, so every other resource is 403 for it without a rule of its own.
 */
import type { ApiKey, PortalSession, Scope, ScopeResource, Visible } from "../store/index.ts";
import { forbidden } from "../lib/errors.ts";

export const PROTECTED: ScopeResource[] = ["api_clients", "api_keys", "subscriptions"];
const DEFAULT_RESOURCES: ScopeResource[] = ["queues", "listeners", "messages", "schemas", "events", "stats"];
const ALL_RESOURCES: ScopeResource[] = [...DEFAULT_RESOURCES, ...PROTECTED];

/** What a portal token reaches: listeners of one queue (`listenerIds` null: all of them, those made later too). */
export type PortalGrant = { sessionId: string; queueId: string; listenerIds: readonly string[] | null; canManage: boolean };

/** Who a request's scopes are checked for: an API key, or a portal session standing in for one. */
export type Credential = ApiKey & { portal?: PortalGrant };

const everything = (resources: ScopeResource[]): Scope[] =>
  resources.flatMap((resource) => [
    { resource, access: "read" as const, targets: ["*"] },
    { resource, access: "write" as const, targets: ["*"] },
  ]);

/** Keys made without scopes: read and write on everything that is not protected. */
export const defaultScopes = (): Scope[] => everything(DEFAULT_RESOURCES);
/** The owner key holds every scope, the protected ones included. */
export const ownerScopes = (): Scope[] => everything(ALL_RESOURCES);

/** The credential a portal session's token stands for; its id (the session's) counts its rate limit. */
export function portalCredential(s: PortalSession): Credential {
  const scopes: Scope[] = [{ resource: "listeners", access: "read", targets: [s.queueId] }];
  if (s.canManage) scopes.push({ resource: "listeners", access: "write", targets: [s.queueId] });
  const portal = { sessionId: s.id, queueId: s.queueId, listenerIds: s.listenerIds, canManage: s.canManage };
  return { id: s.id, orgId: s.orgId, name: "portal session", status: "enabled", scopes, owner: false, createdAt: s.createdAt, portal };
}

const grants = (s: Scope, resource: ScopeResource, access: "read" | "write") =>
  s.resource === resource && (access === "read" || s.access === "write");

/** Of its queue, a portal token reaches the queue itself (a list, a new listener) and its session's listeners. */
const portalReaches = (p: PortalGrant, targets: string[]) =>
  targets.every((t) => t === p.queueId || p.listenerIds === null || p.listenerIds.includes(t));

/** True when some scope grants `access` to `resource` on `*` or on one of `targets` (the item and its queue). */
export function can(key: Credential, resource: ScopeResource, access: "read" | "write", targets: string[] = []): boolean {
  const granted = key.scopes.some((s) => grants(s, resource, access) && (s.targets.includes("*") || targets.some((t) => s.targets.includes(t))));
  return granted && (!key.portal || portalReaches(key.portal, targets));
}

export function requireScope(key: Credential, resource: ScopeResource, access: "read" | "write", targets: string[] = []): void {
  if (!can(key, resource, access, targets)) {
    const who = key.portal ? "This portal session has" : "This API key has";
    throw forbidden(`${who} no ${access} scope on ${resource}${targets.length ? " for this resource" : ""}.`);
  }
}

/** What a list may show: everything, or the targets of the key's scopes granting `access` (403 when none). */
export function visibleTo(key: Credential, resource: ScopeResource, access: "read" | "write" = "read"): Visible {
  const scopes = key.scopes.filter((s) => grants(s, resource, access));
  if (scopes.length === 0) throw forbidden(`This ${key.portal ? "portal session" : "API key"} has no ${access} scope on ${resource}.`);
  if (key.portal) return key.portal.listenerIds ?? [key.portal.queueId];
  if (scopes.some((s) => s.targets.includes("*"))) return "all";
  return [...new Set(scopes.flatMap((s) => s.targets))];
}

/**
 * Which of a message's deliveries the caller reaches: all of them (null) with the messages scope on it; with a
 * portal token, those to the session's listeners only, through the listeners scope (so a view-only session may
 * read but not redeliver). 403 otherwise.
 */
export function messageReach(key: Credential, access: "read" | "write", queueId: string, messageId: string): ((listenerId: string) => boolean) | null {
  if (!key.portal) {
    requireScope(key, "messages", access, [queueId, messageId]);
    return null;
  }
  requireScope(key, "listeners", access, [queueId]);
  return (listenerId) => can(key, "listeners", access, [queueId, listenerId]);
}

/** Routes that manage credentials themselves (portal sessions) are for API keys: a portal token may not mint another. */
export function requireApiKey(key: Credential): void {
  if (key.portal) throw forbidden("A portal session cannot manage portal sessions.");
}
