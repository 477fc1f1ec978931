import type { SQL as Client } from "bun";
import { inArray, or, sql, type Column, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { PgDb, PgTx } from "./client.ts";
import { sqlStateOf } from "./errors.ts";
import { eventIdSql, randomEventTail } from "./events.ts";
import { claimKey } from "./idempotency.ts";
import { lookupId } from "./text.ts";
import { conflict } from "../../lib/errors.ts";
import type { Actor, Visible } from "../index.ts";

/**
 * What the stores of one process share: Drizzle for reads, the raw client for the hot statements, and `write`,
 * which runs a unit of work as one transaction in the process's write order (writer.ts).
 */
export type Conn = {
  db: PgDb;
  client: Client;
  write<T>(fn: (tx: PgTx) => Promise<T>): Promise<T>;
};

/** Runs `fn`, turning a unique violation (23505) into 409 with `detail`. */
export async function unique<T>(detail: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (sqlStateOf(e) === "23505") throw conflict(detail);
    throw e;
  }
}

/** The rows a key may see: everything, or rows whose own id or whose queue's id is a target. */
export function visibleWhere(visible: Visible, idCol: Column, queueCol?: Column): SQL | undefined {
  if (visible === "all") return undefined;
  if (visible.length === 0) return sql`false`;
  const ids = visible.map(lookupId);
  return queueCol ? or(inArray(idCol, ids), inArray(queueCol, ids)) : inArray(idCol, ids);
}

export async function countOf(db: PgDb | PgTx, table: PgTable, where: SQL | undefined): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(table).where(where);
  return row?.n ?? 0;
}

type EventRefs = {
  apiKey?: { id: string; name: string } | null;
  queue?: { id: string; name: string } | null;
  listener?: { id: string; name: string } | null;
  message?: { id: string; name: string | null } | null;
};

/**
 * The usage event of a write, inside the write's transaction; call it last, just before the commit. It moves the
 * organization's event key (events.ts) and holds that row's lock until the commit, so keys grow in commit order.
 * `apiKey` defaults to the calling key.
 */
export async function recordEvent(tx: PgTx, orgId: string, type: string, now: number, actor: Actor | null, refs: EventRefs): Promise<void> {
  // Every write records its event here, in its own transaction: so the request's Idempotency-Key commits with it.
  await claimKey(tx, orgId, actor, now);
  const key = refs.apiKey !== undefined ? refs.apiKey : actor ? { id: actor.keyId, name: actor.keyName } : null;
  await tx.execute(sql`
    WITH k AS (
      INSERT INTO event_keys AS k (org_id, stored_at, seq) VALUES (${orgId}, ${now}, 1)
      ON CONFLICT (org_id) DO UPDATE SET stored_at = greatest(k.stored_at, excluded.stored_at), seq = k.seq + 1
      RETURNING stored_at, seq)
    INSERT INTO events (id, org_id, type, stored_at, api_key_id, api_key_name, queue_id, queue_name, listener_id,
      listener_name, message_id, message_name)
    SELECT ${sql.raw(eventIdSql("k.seq"))} || ${randomEventTail()}, ${orgId}, ${type}, k.stored_at, ${key?.id ?? null},
      ${key?.name ?? null}, ${refs.queue?.id ?? null}, ${refs.queue?.name ?? null}, ${refs.listener?.id ?? null},
      ${refs.listener?.name ?? null}, ${refs.message?.id ?? null}, ${refs.message?.name ?? null}
    FROM k`);
}
