/**
 * Scope rules (docs/api.md, Keys and scopes). Write includes read. A target is `*`, an item's own id, or, for
 * listeners, messages and schemas, the id of their queue. A request outside the key's scopes is 403.
 */
import type { ApiKey, Scope, ScopeResource, Visible } from "../store/index.ts";
import { forbidden } from "../lib/errors.ts";

export const PROTECTED: ScopeResource[] = ["api_clients", "api_keys", "subscriptions"];
const DEFAULT_RESOURCES: ScopeResource[] = ["queues", "listeners", "messages", "schemas", "events", "stats"];
const ALL_RESOURCES: ScopeResource[] = [...DEFAULT_RESOURCES, ...PROTECTED];

const everything = (resources: ScopeResource[]): Scope[] =>
  resources.flatMap((resource) => [
    { resource, access: "read" as const, targets: ["*"] },
    { resource, access: "write" as const, targets: ["*"] },
  ]);

/** Keys made without scopes: read and write on everything that is not protected. */
export const defaultScopes = (): Scope[] => everything(DEFAULT_RESOURCES);
/** The owner key holds every scope, the protected ones included. */
export const ownerScopes = (): Scope[] => everything(ALL_RESOURCES);

const grants = (s: Scope, resource: ScopeResource, access: "read" | "write") =>
  s.resource === resource && (access === "read" || s.access === "write");

/** True when some scope grants `access` to `resource` on `*` or on one of `targets` (the item and its queue). */
export function can(key: ApiKey, resource: ScopeResource, access: "read" | "write", targets: string[] = []): boolean {
  return key.scopes.some((s) => grants(s, resource, access) && (s.targets.includes("*") || targets.some((t) => s.targets.includes(t))));
}

export function requireScope(key: ApiKey, resource: ScopeResource, access: "read" | "write", targets: string[] = []): void {
  if (!can(key, resource, access, targets)) {
    throw forbidden(`This API key has no ${access} scope on ${resource}${targets.length ? " for this resource" : ""}.`);
  }
}

/** What a list may show: everything, or the targets of the key's read-granting scopes (403 when none). */
export function visibleTo(key: ApiKey, resource: ScopeResource): Visible {
  const scopes = key.scopes.filter((s) => grants(s, resource, "read"));
  if (scopes.length === 0) throw forbidden(`This API key has no read scope on ${resource}.`);
  if (scopes.some((s) => s.targets.includes("*"))) return "all";
  return [...new Set(scopes.flatMap((s) => s.targets))];
}
