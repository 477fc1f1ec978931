import { and, asc, eq, sql } from "drizzle-orm";
import { apiKeys } from "./schema.ts";
import { recordEvent, countOf, type Conn, type Db, type Tx } from "./shared.ts";
import { newId } from "../../lib/ids.ts";
import { notFound } from "../../lib/errors.ts";
import type { Actor, ApiKey, ApiKeyStore, NewApiKey } from "../index.ts";

type Row = typeof apiKeys.$inferSelect;
const toKey = (r: Row): ApiKey => ({
  id: r.id,
  orgId: r.orgId,
  name: r.name,
  status: r.status,
  scopes: JSON.parse(r.scopes),
  owner: r.owner,
  createdAt: r.createdAt,
});

/** Inside the caller's transaction, so onboarding makes an organization and its owner key atomically. */
export function insertKey(tx: Tx, orgId: string, key: NewApiKey, now: number, actor: Actor | null): string {
  const row = { id: newId("key"), orgId, name: key.name, status: key.status, scopes: JSON.stringify(key.scopes), keyHash: key.hash, owner: key.owner, createdAt: now };
  tx.insert(apiKeys).values(row).run();
  recordEvent(tx, orgId, "api_key_added", now, actor, { apiKey: { id: row.id, name: row.name } });
  return row.id;
}

export function apiKeyStore({ db, write }: Conn): ApiKeyStore {
  const byHash = db.select().from(apiKeys).where(eq(apiKeys.keyHash, sql.placeholder("hash"))).prepare();
  const find = (tx: Db | Tx, orgId: string, id: string): ApiKey => {
    const row = tx.select().from(apiKeys).where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, id))).get();
    if (!row) throw notFound("The API key");
    return toKey(row);
  };
  return {
    async create(orgId, key, now, actor) {
      return write((tx) => find(tx, orgId, insertKey(tx, orgId, key, now, actor)));
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
      return write((tx) => {
        find(tx, orgId, id);
        const set: Partial<Row> = {};
        if (patch.name !== undefined) set.name = patch.name;
        if (patch.status !== undefined) set.status = patch.status;
        if (patch.scopes !== undefined) set.scopes = JSON.stringify(patch.scopes);
        if (Object.keys(set).length) tx.update(apiKeys).set(set).where(eq(apiKeys.id, id)).run();
        const key = find(tx, orgId, id);
        recordEvent(tx, orgId, "api_key_updated", now, actor, { apiKey: { id, name: key.name } });
        return key;
      });
    },
    async delete(orgId, id, now, actor) {
      await write((tx) => {
        const key = find(tx, orgId, id);
        tx.delete(apiKeys).where(eq(apiKeys.id, id)).run();
        recordEvent(tx, orgId, "api_key_deleted", now, actor, { apiKey: { id, name: key.name } });
      });
    },
    async authenticate(hash) {
      const row = byHash.get({ hash });
      return row ? toKey(row) : null;
    },
  };
}
