/**
 * Usage events on PostgreSQL. `recordEvent` (shared.ts) and the publish statement (publish.ts) write them; this
 * file keys, reads and sweeps them.
 *
 * Paging promises "strictly after (stored_at, id)" (docs/delivery.md), so in an organization that pair must grow in
 * commit order, across every instance. Each write moves its organization's row in `event_keys` (stored_at never
 * below the last one, seq + 1) as its last statement and keeps the row locked until it commits: the next write
 * of that organization waits for that commit, and so gets a larger key and commits after it. The id is the seq
 * in fixed-width hex (so ids within one millisecond sort in commit order, byte by byte: the column's collation is
 * "C") and a random tail that keeps ids unique across organizations.
 */
import { and, asc, eq, gt, gte, or, sql } from "drizzle-orm";
import { events, orgs } from "./schema.ts";
import { guarded } from "./errors.ts";
import { lookupId } from "./text.ts";
import { randomBase62 } from "../../lib/ids.ts";
import type { PgDb } from "./client.ts";
import type { EventStore } from "../index.ts";
import { toEvent } from "../rows.ts";

/** The id of the event with key seq `seq` (an SQL expression), without its random tail. */
export const eventIdSql = (seq: string) => `'evt_' || lpad(to_hex(${seq}), 12, '0')`;
export const randomEventTail = () => randomBase62(8);


/** Rows deleted per statement: each batch is short, and new events are never in its way. */
const SWEEP_BATCH = 2_000;

export function eventStore(db: PgDb): EventStore {
  const sweepBatch = async (orgId: string, before: number) => {
    const result = await db.$client.unsafe(
      `DELETE FROM events WHERE ctid = ANY(ARRAY(SELECT ctid FROM events WHERE org_id = $1 AND stored_at < $2 LIMIT ${SWEEP_BATCH}))`,
      [orgId, before],
    );
    return result.count as number;
  };
  return {
    list: (orgId, q) =>
      guarded(async () => {
        // The lower bound starts the (org_id, stored_at, id) index range at the cursor, as on SQLite.
        const from = q.after ? Math.max(q.since, q.after.storedAt) : q.since;
        const after = q.after
          ? or(gt(events.storedAt, q.after.storedAt), and(eq(events.storedAt, q.after.storedAt), gt(events.id, lookupId(q.after.id))))
          : undefined;
        // An exact prefix test: in LIKE, `_` would be a wildcard.
        const prefix = q.prefix ? sql`left(${events.type}, ${q.prefix.length}) = ${q.prefix}` : undefined;
        const rows = await db
          .select()
          .from(events)
          .where(and(eq(events.orgId, orgId), gte(events.storedAt, from), prefix, after))
          .orderBy(asc(events.storedAt), asc(events.id))
          .limit(q.limit);
        return rows.map(toEvent);
      }),
    sweep: (before) =>
      guarded(async () => {
        let total = 0;
        for (const { id } of await db.select({ id: orgs.id }).from(orgs)) {
          for (;;) {
            const deleted = await sweepBatch(id, before);
            total += deleted;
            if (deleted < SWEEP_BATCH) break;
          }
        }
        return total;
      }),
  };
}
