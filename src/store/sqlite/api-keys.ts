import { and, asc, eq, sql } from "drizzle-orm";
import { apiKeys } from "./schema.ts";
import { recordEvent, countOf, type Conn, type Db, type Tx } from "./shared.ts";
import { notFound } from "../../lib/errors.ts";
import type { Actor, ApiKey, ApiKeyStore, NewApiKey } from "../index.ts";
import { keyChanges, newKey, toKey } from "../rows.ts";

/** Inside the caller's transaction, so onboarding makes an organization and its owner key atomically. */
export function insertKey(tx: Tx, orgId: string, key: NewApiKey, now: number, actor: Actor | null): ApiKey {
  const row = newKey(orgId, key, now);
  tx.insert(apiKeys).values(row).run();
  recordEvent(tx, orgId, "api_key_added", now, actor, { apiKey: { id: row.id, name: row.name } });
  return toKey(row);
}

/**
 * Every request authenticates, so found keys are remembered briefly. Any key change made through this store
 * clears the cache after it commits, so a disabled or deleted key is refused on its very next request; the
 * lifetime only bounds staleness from writers elsewhere (another instance). Misses are not cached: a key made by
 * `fanout orgs create` works at once.
 */
const CACHE_MS = 5_000;
const CACHE_MAX = 10_000;

export function apiKeyStore({ db, write }: Conn): ApiKeyStore {
  const byHash = db.select().from(apiKeys).where(eq(apiKeys.keyHash, sql.placeholder("hash"))).prepare();
  const cache = new Map<string, { key: ApiKey; until: number }>();
  const find = (tx: Db | Tx, orgId: string, id: string): ApiKey => {
    const row = tx.select().from(apiKeys).where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, id))).get();
    if (!row) throw notFound("The API key");
    return toKey(row);
  };
  return {
    async create(orgId, key, now, actor) {
      return write((tx) => insertKey(tx, orgId, key, now, actor));
    },
    async list(orgId, page) {
      const where = eq(apiKeys.orgId, orgId);
      const rows = db.select().from(apiKeys).where(where).orderBy(asc(apiKeys.seq)).limit(page.limit).offset(page.offset).all();
      return { items: rows.map(toKey), total: countOf(db, apiKeys, where) };
    },
    async get(orgId, id) {
      return find(db, orgId, id);
    },
    async update(orgId, id, patch, now, actor) {
      const updated = await write((tx) => {
        find(tx, orgId, id);
        const set = keyChanges(patch);
        if (set) tx.update(apiKeys).set(set).where(eq(apiKeys.id, id)).run();
        const key = find(tx, orgId, id);
        recordEvent(tx, orgId, "api_key_updated", now, actor, { apiKey: { id, name: key.name } });
        return key;
      });
      cache.clear();
      return updated;
    },
    async delete(orgId, id, now, actor) {
      await write((tx) => {
        const key = find(tx, orgId, id);
        tx.delete(apiKeys).where(eq(apiKeys.id, id)).run();
        recordEvent(tx, orgId, "api_key_deleted", now, actor, { apiKey: { id, name: key.name } });
      });
      cache.clear();
    },
    async authenticate(hash) {
      const hit = cache.get(hash);
      if (hit && hit.until > performance.now()) return hit.key;
      const row = byHash.get({ hash });
      if (!row) return null;
      if (cache.size >= CACHE_MAX) cache.clear();
      const key = toKey(row);
      cache.set(hash, { key, until: performance.now() + CACHE_MS });
      return key;
    },
  };
}
