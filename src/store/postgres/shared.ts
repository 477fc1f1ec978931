import type { SQL as Client } from "bun";
import { inArray, or, sql, type Column, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import type { PgDb, PgTx } from "./client.ts";
import { sqlStateOf } from "./errors.ts";
import { drizzleExec, writeEvent } from "./event-writes.ts";
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
 * The usage event of a write, inside the write's transaction; call it last, just before the commit. It moves the
 * organization's event key (events.ts) and holds that row's lock until the commit, so keys grow in commit order;
 * it also publishes the event to the organization's events queue (event-writes.ts). `apiKey` defaults to the
 * calling key (none for a portal token).
 */
export async function recordEvent(tx: PgTx, orgId: string, type: string, now: number, actor: Actor | null, refs: EventRefs): Promise<void> {
  // Every write records its event here, in its own transaction: so the request's Idempotency-Key commits with it.
  await claimKey(tx, orgId, actor, now);
  const key = refs.apiKey !== undefined ? refs.apiKey : actor && !actor.portalSession ? { id: actor.keyId, name: actor.keyName } : null;
  // A portal token is no key: its changes name the session instead (docs/portal.md).
  const portalSession = refs.portalSession !== undefined ? refs.portalSession : actor?.portalSession ? { id: actor.portalSession } : null;
  await writeEvent(drizzleExec(tx), {
    orgId, type, apiKey: key, queue: refOf(refs.queue), listener: refOf(refs.listener),
    message: refs.message ? { id: refs.message.id, name: refs.message.name } : null,
    portalSession, details: refs.details ?? null,
  }, now);
}

/** Only the reference: callers pass whole rows. */
const refOf = (r: { id: string; name: string } | null | undefined) => (r ? { id: r.id, name: r.name } : null);
