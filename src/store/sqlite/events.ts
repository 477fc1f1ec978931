/**
 * Usage events. `recordEvent` (shared.ts) writes them inside the transaction of the change they record, keyed
 * by `nextEventKey`; this file reads and sweeps them.
 *
 * Paging promises "strictly after (stored_at, id)" (docs/delivery.md), so within an organization that pair must grow
 * in commit order: else an event committed after a client read its page, but keyed before the page's end, would
 * never be seen (the request's `now` is read before its transaction starts, and concurrent requests commit in
 * any order). Write transactions are serialized (BEGIN IMMEDIATE), so reading the organization's last key inside
 * the transaction and going past it is enough: `stored_at` never goes below the last one, and the id carries the
 * time and a per-millisecond sequence in fixed-width base62, whose ASCII order is numeric order.
 */
import { and, asc, eq, gt, gte, or, sql } from "drizzle-orm";
import { events, orgs } from "./schema.ts";
import { transactionMemo } from "./transaction-memo.ts";
import type { Conn, Raw } from "./shared.ts";
import { base62, fromBase62, randomBase62 } from "../../lib/ids.ts";
import type { EventStore } from "../index.ts";
import { toEvent } from "../rows.ts";


const SEQ_LIMIT = 62 ** 4;

/** `evt_` + stored_at (8) + sequence within that millisecond (4) + random (8), which keeps ids unique across organizations. */
const eventId = (storedAt: number, seq: number) => `evt_${base62(storedAt, 8)}${base62(seq, 4)}${randomBase62(8)}`;

type EventKey = { id: string; storedAt: number };
/** A key this process made: its sequence within the millisecond is known, so the next one needs no parsing. */
type MadeKey = EventKey & { seq: number };

/**
 * Each organization's newest event key within the current write transaction of one connection. While this
 * connection holds the write lock nobody else can add events, so the newest key is read once per organization
 * per transaction instead of once per write (a SELECT on every publish). The group commit forgets
 * it (clears the map) at each BEGIN. A unit rolled back to its savepoint may leave it ahead of the table: the
 * next key then follows a key that was never committed, which keeps keys growing, all paging needs.
 */
export const eventKeys = transactionMemo<MadeKey>();

function newestKey(tx: Raw, orgId: string): EventKey | null {
  return tx.$client
    .query<EventKey, [string]>("SELECT stored_at AS storedAt, id FROM events WHERE org_id = ? ORDER BY stored_at DESC, id DESC LIMIT 1")
    .get(orgId);
}

const made = (storedAt: number, seq: number): MadeKey => ({ id: eventId(storedAt, seq), storedAt, seq });

/** The key after `last` at `now`: after the organization's newest one, whatever `now` says. */
function keyAfter(last: EventKey | MadeKey | null, now: number): MadeKey {
  if (!last || last.storedAt < now) return made(now, 0);
  const storedAt = last.storedAt;
  // Ours, from the memo: the next sequence sorts after it whatever the random tail (fixed-width base62 digits).
  if ("seq" in last) return last.seq + 1 < SEQ_LIMIT ? made(storedAt, last.seq + 1) : made(storedAt + 1, 0);
  const sameMs = last.id.slice(4, 12) === base62(storedAt, 8);
  const seq = sameMs ? fromBase62(last.id.slice(12, 16)) + 1 : SEQ_LIMIT;
  // A full millisecond, or a last id of another shape: move on to the next millisecond.
  if (seq >= SEQ_LIMIT) return made(storedAt + 1, 0);
  const key = made(storedAt, seq);
  return key.id > last.id ? key : made(storedAt + 1, 0);
}

/** The (stored_at, id) of the organization's next event; call it inside the write transaction that stores it. */
export function nextEventKey(tx: Raw, orgId: string, now: number): MadeKey {
  const memo = eventKeys.during(tx.$client);
  const key = keyAfter(memo?.get(orgId) ?? newestKey(tx, orgId), now);
  memo?.set(orgId, key);
  return key;
}

/** Rows deleted per statement: small enough that one batch holds the write lock for a few milliseconds. */
const SWEEP_BATCH = 2_000;

export function eventStore({ db, write }: Conn): EventStore {
  // Per organization, so each batch is a range of the (org_id, stored_at, id) index, the table's only index.
  // Each batch is its own write: the group commit yields to requests between batches.
  const sweepBatch = (orgId: string, before: number) =>
    write((tx) =>
      tx.$client
        .query(`DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE org_id = ? AND stored_at < ? LIMIT ${SWEEP_BATCH})`)
        .run(orgId, before).changes,
    );
  return {
    async list(orgId, q) {
      // The lower bound starts the (org_id, stored_at, id) index range at the cursor, so a deep page costs no
      // more than the first; the OR then drops the cursor's own millisecond up to and including its id.
      const from = q.after ? Math.max(q.since, q.after.storedAt) : q.since;
      const after = q.after
        ? or(gt(events.storedAt, q.after.storedAt), and(eq(events.storedAt, q.after.storedAt), gt(events.id, q.after.id)))
        : undefined;
      // An exact prefix test: in LIKE, `_` would be a wildcard.
      const prefix = q.prefix ? sql`substr(${events.type}, 1, ${q.prefix.length}) = ${q.prefix}` : undefined;
      const rows = db
        .select()
        .from(events)
        .where(and(eq(events.orgId, orgId), gte(events.storedAt, from), prefix, after))
        .orderBy(asc(events.storedAt), asc(events.id))
        .limit(q.limit)
        .all();
      return rows.map(toEvent);
    },
    async sweep(before) {
      let total = 0;
      for (const { id } of db.select({ id: orgs.id }).from(orgs).all()) {
        for (;;) {
          const deleted = await sweepBatch(id, before);
          total += deleted;
          if (deleted < SWEEP_BATCH) break;
        }
      }
      return total;
    },
  };
}
