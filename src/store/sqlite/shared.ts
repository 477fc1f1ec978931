import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { Database } from "bun:sqlite";
import { inArray, or, sql, type SQL, type Column } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "./schema.ts";
import { nextEventKey } from "./events.ts";
import { claimKey } from "./idempotency.ts";
import { mirrorEvent } from "./events-queue.ts";
import { conflict } from "../../lib/errors.ts";
import type { UnitMode } from "./group-commit.ts";
import type { Actor, Visible } from "../index.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };
/** What the raw statements need: the API's Drizzle connection, or the delivery worker's bare one. */
export type Raw = { $client: Database };
/** Writes run on the connection itself inside the group commit's transaction; a separate type only names the role. */
export type Tx = Db;
/**
 * `mode` (group-commit.ts): `guarded` by default, in a savepoint of its own; `checked`, a unit whose AppErrors all
 * come before its first write, without one; `alone`, a unit that may change many rows, in a transaction of its own.
 */
export type Write = <T>(fn: (tx: Tx) => T, options?: { mode?: UnitMode }) => Promise<T>;
/** What a store needs: the connection for reads, and `write`, which runs a unit of work in a group commit. */
export type Conn = { db: Db; write: Write };

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

export type EventRefs = {
  apiKey?: { id: string; name: string } | null;
  queue?: { id: string; name: string } | null;
  listener?: { id: string; name: string } | null;
  message?: { id: string; name: string | null } | null;
  /** The portal session the change concerns; by default the one whose token made it (the actor's). */
  portalSession?: { id: string } | null;
  /** Fields of the event's own type (a liveness change's `from` and `to`). */
  details?: Record<string, unknown> | null;
};

/**
 * The usage event of a write, inside the write's transaction, and the message it makes on the organization's
 * events queue (events-queue.ts). `apiKey` defaults to the calling key (none for a portal token). Its key (stored_at, id) comes from
 * `nextEventKey`, which keeps it growing in commit order for paging.
 */
export function recordEvent(tx: Raw, orgId: string, type: string, now: number, actor: Actor | null, refs: EventRefs): void {
  // Every write records its event here, in its own transaction: so the request's Idempotency-Key commits with it.
  claimKey(tx, orgId, actor, now);
  const key = refs.apiKey !== undefined ? refs.apiKey : actor && !actor.portalSession ? { id: actor.keyId, name: actor.keyName } : null;
  // A portal token is no key: its changes name the session instead (docs/portal.md).
  const portalSession = refs.portalSession !== undefined ? refs.portalSession : actor?.portalSession ? { id: actor.portalSession } : null;
  const { id, storedAt } = nextEventKey(tx, orgId, now);
  const details = refs.details ? JSON.stringify(refs.details) : null;
  // Every write records one: plain SQL through bun:sqlite's statement cache keeps it off the publish profile.
  tx.$client
    .query(
      `INSERT INTO events (id, org_id, type, stored_at, api_key_id, api_key_name, queue_id, queue_name, listener_id,
       listener_name, message_id, message_name, portal_session_id, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(id, orgId, type, storedAt, key?.id ?? null, key?.name ?? null, refs.queue?.id ?? null, refs.queue?.name ?? null,
      refs.listener?.id ?? null, refs.listener?.name ?? null, refs.message?.id ?? null, refs.message?.name ?? null,
      portalSession?.id ?? null, details);
  if (type === "message_added") return; // never mirrored: not even a look at the organization on the publish path
  mirrorEvent(tx, {
    id, type, storedAt, orgId, apiKey: key, queue: refs.queue ?? null, listener: refs.listener ? { id: refs.listener.id, name: refs.listener.name } : null,
    message: refs.message ? { id: refs.message.id, name: refs.message.name } : null, portalSession, details: refs.details ?? null,
  }, now);
}

export function countOf(tx: Db | Tx, table: SQLiteTable, where: SQL | undefined): number {
  return tx.select({ n: sql<number>`count(*)` }).from(table).where(where).get()?.n ?? 0;
}
