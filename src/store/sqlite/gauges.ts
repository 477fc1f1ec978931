/**
 * The figures /metrics reads at each scrape (StoreGauges in store/index.ts), on the main connection. Every
 * statement reaches its rows through an index (gauges.test.ts checks the plans): the delivery counts read
 * only the partial index of pending rows (listener_seq, next_attempt_at), never the rows themselves, and
 * group them by listener before the listeners table maps them to organizations. That still visits each
 * pending row's index entry, a cost that grows with the backlog (docs/metrics.md has the figure), which is why
 * the server reads them on the checkpoint thread (checkpointer.ts), off the API thread.
 */
import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import type { StoreGauges, LivenessState } from "../index.ts";
import { CURSOR_SQL } from "./fanout.ts";

export const GAUGES_SQL = {
  deliveries: `SELECT l.org_id AS orgId, sum(c.held) AS held, sum(c.total) - sum(c.held) AS pending
    FROM (SELECT listener_seq, sum(next_attempt_at IS NULL) AS held, count(*) AS total
          FROM deliveries WHERE state = 'pending' GROUP BY listener_seq) c
    CROSS JOIN listeners l ON l.seq = c.listener_seq
    GROUP BY l.org_id`,
  listeners: `SELECT org_id AS orgId, liveness_state AS state, count(*) AS count FROM listeners GROUP BY org_id, liveness_state`,
  // Held rows have next_attempt_at NULL and so fall outside the range; a scheduled retry is not due yet.
  // A FIFO line's rows wait for their turn, not past it: left out (the due index holds none of them).
  oldestDue: `SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending' AND line = 0 AND next_attempt_at <= $now`,
  // Messages past the fan-out cursor have no delivery rows yet (fanout.ts); the oldest one has waited longest.
  oldestUnfanned: `SELECT created_at AS at FROM messages WHERE seq > ${CURSOR_SQL} ORDER BY seq LIMIT 1`,
} as const;

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0; // no WAL file (yet, or after a truncating checkpoint): nothing on disk
  }
}

type Statements = Record<keyof typeof GAUGES_SQL, ReturnType<Database["prepare"]>>;

/** Prepared on the first scrape, not at open: a connection opened before the migrations (or without them) works. */
export function storeGauges(sqlite: Database, path: string): (now: number) => Promise<StoreGauges> {
  let prepared: Statements | undefined;
  return async (now) => {
    const s = (prepared ??= Object.fromEntries(Object.entries(GAUGES_SQL).map(([k, sql]) => [k, sqlite.prepare(sql)])) as Statements);
    const deliveries = s.deliveries.all() as { orgId: string; pending: number; held: number }[];
    const listeners = s.listeners.all() as { orgId: string; state: LivenessState; count: number }[];
    const due = (s.oldestDue.get({ now }) as { at: number | null } | null)?.at ?? null;
    const unfanned = (s.oldestUnfanned.get() as { at: number } | null)?.at ?? null;
    const oldestDueAt = due === null ? unfanned : unfanned === null ? due : Math.min(due, unfanned);
    return { deliveries, listeners, oldestDueAt, databaseBytes: fileBytes(path) + fileBytes(`${path}-wal`) };
  };
}
