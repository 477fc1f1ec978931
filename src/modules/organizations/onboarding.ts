/**
 * Onboarding (docs/api.md): an organization is made with its owner key, which holds every scope,
 * the protected ones included. Used by `fanout serve` on an empty database and by `fanout orgs create`.
 */
import type { Org, Store } from "../../store/index.ts";
import { newApiKeySecret, sha256Hex } from "../../lib/ids.ts";
import { ownerScopes } from "../../http/scopes.ts";
import { AppError } from "../../lib/errors.ts";

export type Onboarded = { org: Org; secret: string; generated: boolean };

export async function createOrganization(store: Store, name: string, secret: string | undefined, now: number): Promise<Onboarded> {
  const key = secret ?? newApiKeySecret();
  const org = await store.orgs.create(name, now, { name: "owner", status: "enabled", scopes: ownerScopes(), hash: sha256Hex(key), owner: true });
  return { org, secret: key, generated: secret === undefined };
}

/**
 * On an empty database only: later starts find the organization already there and print no key. Of instances
 * starting together on an empty PostgreSQL database one makes it; the others find its name taken (409) and go on.
 */
export async function bootstrap(store: Store, name: string, secret: string | undefined, now: number): Promise<Onboarded | null> {
  if ((await store.orgs.list()).length > 0) return null;
  try {
    return await createOrganization(store, name, secret, now);
  } catch (e) {
    if (e instanceof AppError && e.status === 409) return null;
    throw e;
  }
}
