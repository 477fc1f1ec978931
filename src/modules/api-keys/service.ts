/**
 * API keys (docs/api.md, Keys and scopes). Only keys holding the protected `api_keys` scope manage keys,
 * and only the owner key holds it. Keys made here never hold a protected scope (422). The owner key cannot be
 * disabled, deleted or re-scoped (423): it is the organization's way back in, so losing it would lock the
 * organization out of key management for good. Renaming it is harmless and allowed.
 */
import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { PROTECTED, defaultScopes, requireScope } from "../../http/scopes.ts";
import { locked, unprocessable } from "../../lib/errors.ts";
import { newApiKeySecret, randomBase62, sha256Hex } from "../../lib/ids.ts";
import type { ApiKey, ApiKeyPatch, Page, Scope, ScopeResource } from "../../store/index.ts";

export type ScopeBody = { resource: ScopeResource; access: "read" | "write"; targets: string[] | "*" };
export type ApiKeyBody = { name?: string; status?: "enabled" | "disabled"; scopes?: ScopeBody[] };

/** A lone `"*"` and any list holding `"*"` both mean everything; repeated ids are dropped. */
function normaliseScopes(scopes: ScopeBody[]): Scope[] {
  const errors = scopes.flatMap((s, i) =>
    PROTECTED.includes(s.resource) ? [{ path: `/scopes/${i}/resource`, message: `${s.resource} is a protected scope` }] : [],
  );
  if (errors.length) throw unprocessable("Protected scopes (api_clients, api_keys, subscriptions) cannot be granted.", errors);
  return scopes.map((s) => {
    const targets = s.targets === "*" || s.targets.includes("*") ? ["*"] : [...new Set(s.targets)];
    return { resource: s.resource, access: s.access, targets };
  });
}

export async function createApiKey(deps: Deps, auth: Auth, body: ApiKeyBody, now: number): Promise<{ key: ApiKey; secret: string }> {
  requireScope(auth.key, "api_keys", "write");
  const scopes = body.scopes === undefined ? defaultScopes() : normaliseScopes(body.scopes);
  const secret = newApiKeySecret();
  const input = { name: body.name ?? `key-${randomBase62(8)}`, status: body.status ?? "enabled", scopes, hash: sha256Hex(secret), owner: false } as const;
  const key = await deps.store.apiKeys.create(auth.orgId, input, now, auth.actor);
  return { key, secret };
}

/** Listing shows every key of the organization, so it needs read on all keys (`*`), not on some. */
export async function listApiKeys(deps: Deps, auth: Auth, page: Page) {
  requireScope(auth.key, "api_keys", "read");
  return deps.store.apiKeys.list(auth.orgId, page);
}

export async function getApiKey(deps: Deps, auth: Auth, id: string): Promise<ApiKey> {
  requireScope(auth.key, "api_keys", "read", [id]);
  return deps.store.apiKeys.get(auth.orgId, id);
}

/** The owner flag never changes, so checking it before the write cannot race with another request. */
function guardOwner(key: ApiKey, body: ApiKeyBody): void {
  if (!key.owner) return;
  if (body.status === "disabled") throw locked("The owner key cannot be disabled.");
  if (body.scopes !== undefined) throw locked("The scopes of the owner key cannot be changed.");
}

/** Scopes, when given, replace the whole array: there are no incremental updates. */
export async function updateApiKey(deps: Deps, auth: Auth, id: string, body: ApiKeyBody, now: number): Promise<ApiKey> {
  requireScope(auth.key, "api_keys", "write", [id]);
  guardOwner(await deps.store.apiKeys.get(auth.orgId, id), body);
  const patch: ApiKeyPatch = { name: body.name, status: body.status, scopes: body.scopes === undefined ? undefined : normaliseScopes(body.scopes) };
  return deps.store.apiKeys.update(auth.orgId, id, patch, now, auth.actor);
}

export async function deleteApiKey(deps: Deps, auth: Auth, id: string, now: number): Promise<void> {
  requireScope(auth.key, "api_keys", "write", [id]);
  const current = await deps.store.apiKeys.get(auth.orgId, id);
  if (current.owner) throw locked("The owner key cannot be deleted.");
  await deps.store.apiKeys.delete(auth.orgId, id, now, auth.actor);
}
