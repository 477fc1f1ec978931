import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { inArray, or, sql, type SQL, type Column } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "./schema.ts";
import { nextEventKey } from "./events.ts";
import { conflict } from "../../lib/errors.ts";
import type { Actor, Visible } from "../index.ts";

export type Db = BunSQLiteDatabase<typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** Every write is BEGIN IMMEDIATE: taking the write lock up front turns a would-be deadlock into a busy wait. */
export function write<T>(db: Db, fn: (tx: Tx) => T): T {
  return db.transaction(fn, { behavior: "immediate" });
}

/** Runs `fn`, turning a UNIQUE violation into 409 with `detail`. */
export function unique<T>(detail: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof Error && /UNIQUE constraint failed/.test(e.message)) throw conflict(detail);
    throw e;
  }
}

/** The rows a key may see: everything, or rows whose own id or whose queue's id is a target. */
export function visibleWhere(visible: Visible, idCol: Column, queueCol?: Column): SQL | undefined {
  if (visible === "all") return undefined;
  if (visible.length === 0) return sql`0`;
  const ids = [...visible];
  return queueCol ? or(inArray(idCol, ids), inArray(queueCol, ids)) : inArray(idCol, ids);
}

type EventRefs = {
  apiKey?: { id: string; name: string } | null;
  queue?: { id: string; name: string } | null;
  listener?: { id: string; name: string } | null;
  message?: { id: string; name: string | null } | null;
};

/**
 * The usage event of a write, inside the write's transaction. `apiKey` defaults to the calling key. Its key
 * (stored_at, id) comes from `nextEventKey`, which keeps it growing in commit order for paging.
 */
export function recordEvent(tx: Tx, orgId: string, type: string, now: number, actor: Actor | null, refs: EventRefs): void {
  const key = refs.apiKey !== undefined ? refs.apiKey : actor ? { id: actor.keyId, name: actor.keyName } : null;
  const { id, storedAt } = nextEventKey(tx, orgId, now);
  tx.insert(schema.events)
    .values({
      id,
      orgId,
      type,
      storedAt,
      apiKeyId: key?.id ?? null,
      apiKeyName: key?.name ?? null,
      queueId: refs.queue?.id ?? null,
      queueName: refs.queue?.name ?? null,
      listenerId: refs.listener?.id ?? null,
      listenerName: refs.listener?.name ?? null,
      messageId: refs.message?.id ?? null,
      messageName: refs.message?.name ?? null,
    })
    .run();
}

export function countOf(tx: Db | Tx, table: SQLiteTable, where: SQL | undefined): number {
  return tx.select({ n: sql<number>`count(*)` }).from(table).where(where).get()?.n ?? 0;
}
