import { and, asc, eq, sql } from "drizzle-orm";
import { apiKeys } from "./schema.ts";
import { recordEvent, countOf, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { Actor, ApiKey, ApiKeyStore, NewApiKey } from "../index.ts";
import { keyChanges, newKey, toKey } from "../rows.ts";
import type { Clock } from "../../lib/clock.ts";

/** Inside the caller's transaction, so onboarding makes an organization and its owner key atomically. */
export async function insertKey(tx: PgTx, orgId: string, key: NewApiKey, now: number, actor: Actor | null): Promise<ApiKey> {
  const row = newKey(orgId, key, now);
  await tx.insert(apiKeys).values(row);
  await recordEvent(tx, orgId, "api_key_added", now, actor, { apiKey: { id: row.id, name: row.name } });
  return toKey(row);
}

async function find(db: PgDb | PgTx, orgId: string, id: string): Promise<ApiKey> {
  const [row] = await db.select().from(apiKeys).where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, lookupId(id))));
  if (!row) throw notFound("The API key");
  return toKey(row);
}

/**
 * Found keys are remembered briefly, as on SQLite. A change made by this process clears the cache after it commits
 * and tells the other instances (`changed`); one made by another instance reaches this one through `forget`, which
 * the store calls on that notification (notifications.ts). `watch` starts that subscription, at the first lookup;
 * the lifetime (on the store's clock) bounds what a lost notification can leave.
 */
const CACHE_MS = 5_000;
const CACHE_MAX = 10_000;

export type CachedApiKeyStore = ApiKeyStore & { forget(): void };

export function apiKeyStore({ db, write }: Conn, changed: () => void, watch: () => void, clock: Clock): CachedApiKeyStore {
  const byHash = db.select().from(apiKeys).where(eq(apiKeys.keyHash, sql.placeholder("hash"))).prepare("api_key_by_hash");
  const cache = new Map<string, { key: ApiKey; until: number }>();
  const forget = () => cache.clear();
  const afterChange = <T>(p: Promise<T>) => p.then((v) => (forget(), changed(), v));
  return {
    forget,
    create: (orgId, key, now, actor) => write((tx) => insertKey(tx, orgId, key, now, actor)),
    list: (orgId, page) =>
      guarded(async () => {
        const where = eq(apiKeys.orgId, orgId);
        const rows = await db.select().from(apiKeys).where(where).orderBy(asc(apiKeys.seq)).limit(page.limit).offset(page.offset);
        return { items: rows.map(toKey), total: await countOf(db, apiKeys, where) };
      }),
    get: (orgId, id) => guarded(() => find(db, orgId, id)),
    update: (orgId, id, patch, now, actor) =>
      afterChange(write(async (tx) => {
        await find(tx, orgId, id);
        const set = keyChanges(patch);
        if (set) await tx.update(apiKeys).set(set).where(eq(apiKeys.id, id));
        const key = await find(tx, orgId, id);
        await recordEvent(tx, orgId, "api_key_updated", now, actor, { apiKey: { id, name: key.name } });
        return key;
      })),
    delete: (orgId, id, now, actor) =>
      afterChange(write(async (tx) => {
        const key = await find(tx, orgId, id);
        await tx.delete(apiKeys).where(eq(apiKeys.id, id));
        await recordEvent(tx, orgId, "api_key_deleted", now, actor, { apiKey: { id, name: key.name } });
      })),
    authenticate: (hash) =>
      guarded(async () => {
        watch();
        const hit = cache.get(hash);
        if (hit && hit.until > clock.now()) return hit.key;
        const [row] = await byHash.execute({ hash });
        if (!row) return null;
        if (cache.size >= CACHE_MAX) cache.clear();
        const key = toKey(row);
        cache.set(hash, { key, until: clock.now() + CACHE_MS });
        return key;
      }),
  };
}
