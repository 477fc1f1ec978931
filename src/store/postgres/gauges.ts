/**
 * The figures /metrics reads at each scrape (StoreGauges in store/index.ts), as on SQLite (store/sqlite/gauges.ts):
 * the delivery counts read the partial index of pending rows (listener_seq, next_attempt_at), grouped by listener
 * before the listeners table maps them to organizations. Every instance answers for the whole database.
 */
import type { SQL } from "bun";
import { num, numOrNull } from "./client.ts";
import { guarded } from "./errors.ts";
import type { LivenessState, StoreGauges } from "../index.ts";

const DELIVERIES = `SELECT l.org_id, sum(c.held) AS held, sum(c.total) - sum(c.held) AS pending
  FROM (SELECT listener_seq, count(*) FILTER (WHERE next_attempt_at IS NULL) AS held, count(*) AS total
        FROM deliveries WHERE state = 'pending' GROUP BY listener_seq) c
  JOIN listeners l ON l.seq = c.listener_seq
  GROUP BY l.org_id`;
const LISTENERS = "SELECT org_id, liveness_state, count(*) AS n FROM listeners GROUP BY org_id, liveness_state";
// Held rows have next_attempt_at NULL and so fall outside the range; a scheduled retry is not due yet.
const OLDEST_DUE = "SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending' AND next_attempt_at <= $1";

export function storeGauges(client: SQL): (now: number) => Promise<StoreGauges> {
  return (now) =>
    guarded(async () => {
      const [deliveries, listeners, [due], [size]] = await Promise.all([
        client.unsafe(DELIVERIES), client.unsafe(LISTENERS), client.unsafe(OLDEST_DUE, [now]),
        client`SELECT pg_database_size(current_database()) AS bytes`,
      ]);
      return {
        deliveries: deliveries.map((r: { org_id: string; pending: string; held: string }) => ({ orgId: r.org_id, pending: num(r.pending), held: num(r.held) })),
        listeners: listeners.map((r: { org_id: string; liveness_state: LivenessState; n: string }) => ({ orgId: r.org_id, state: r.liveness_state, count: num(r.n) })),
        oldestDueAt: numOrNull(due?.at),
        databaseBytes: num(size.bytes),
      };
    });
}
