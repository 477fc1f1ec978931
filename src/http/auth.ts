/**
 * X-API-KEY → organization and scopes. The secret is hashed (SHA-256) and the hash looked up; the secret itself
 * is never compared, stored or logged. Unknown, disabled or missing keys are all 401 alike.
 */
import type { ApiKey, Actor, Store } from "../store/index.ts";
import { sha256Hex } from "../lib/ids.ts";
import { unauthorized } from "../lib/errors.ts";

export type Auth = { orgId: string; key: ApiKey; actor: Actor };

export async function authenticate(store: Store, header: string | null): Promise<Auth> {
  if (!header) throw unauthorized("The X-API-KEY header is missing.");
  const key = await store.apiKeys.authenticate(sha256Hex(header));
  if (!key || key.status !== "enabled") throw unauthorized("The API key is unknown or disabled.");
  return { orgId: key.orgId, key, actor: { keyId: key.id, keyName: key.name } };
}
