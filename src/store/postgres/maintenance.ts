/**
 * The delivery claim (delivery-sql.ts) reads the oldest due rows through an index and stops after a window, which
 * stays fast only while PostgreSQL's housekeeping keeps up. Where autovacuum is off or behind, the instance that
 * leads the delivery housekeeping does it for fanout's tables, with autovacuum's own thresholds:
 * - statistics, without which the planner sorts every due row on every claim: tables changed by more than 50
 *   rows and 10 % since their last analysis are analyzed, at most every 30 s each: without that limit a table
 *   growing under ingest crossed 10 % at every look, and the leader's ANALYZE runs (each sampling 30,000 rows of
 *   a table however large) took a large share of the database server. Between two analyses the planner scales
 *   the last statistics to a table's current size;
 * - dead rows, which every claim steps over at the head of its index until a vacuum removes them: tables with
 *   more than 10,000 dead rows and 20 % are vacuumed, at most every 10 s each, since a vacuum reads the whole
 *   table and every index. docs/postgres.md has the measurements.
 */
import type { SQL } from "bun";

const TABLES = ["deliveries", "messages", "listeners", "attempts", "events", "event_keys"];
const VACUUM_EVERY_S = 10;
const ANALYZE_EVERY_S = 30;

/** Neither we nor autovacuum ran `op` on the table in the `seconds` before $2 (now, epoch ms). */
const notRunWithin = (op: "analyze" | "vacuum", seconds: number) =>
  `greatest(coalesce(last_${op}, 'epoch'), coalesce(last_auto${op}, 'epoch')) < to_timestamp($2 / 1000.0) - interval '${seconds} seconds'`;

const STALE = `SELECT relname FROM pg_stat_user_tables
  WHERE schemaname = current_schema() AND relname = ANY($1::text[])
    AND n_mod_since_analyze > 50 + 0.1 * greatest(n_live_tup, 0)
    AND ${notRunWithin("analyze", ANALYZE_EVERY_S)}`;

const DEAD = `SELECT relname FROM pg_stat_user_tables
  WHERE schemaname = current_schema() AND relname = ANY($1::text[])
    AND n_dead_tup > 10000 + 0.2 * greatest(n_live_tup, 0)
    AND ${notRunWithin("vacuum", VACUUM_EVERY_S)}`;

/** Analyzes the tables whose statistics are stale; returns their names. */
export async function refreshStatistics(client: SQL, now: number): Promise<string[]> {
  const stale: { relname: string }[] = await client.unsafe(STALE, [TABLES, now]);
  for (const { relname } of stale) await client.unsafe(`ANALYZE ${relname}`);
  return stale.map((t) => t.relname);
}

/** Vacuums the tables full of dead rows; returns their names. */
export async function removeDeadRows(client: SQL, now: number): Promise<string[]> {
  const dead: { relname: string }[] = await client.unsafe(DEAD, [TABLES, now]);
  for (const { relname } of dead) await client.unsafe(`VACUUM ${relname}`);
  return dead.map((t) => t.relname);
}
