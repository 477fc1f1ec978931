/**
 * The claim's plan (delivery-sql.ts) reads the oldest due rows through an index and stops after a window; the
 * planner chooses that only while it knows the table is large. Without statistics (a server whose autovacuum is
 * off, or has not caught up with a table that grew in seconds) it sorted every due row on every claim instead,
 * 27 ms a claim with 4,000 due rows here, and more with every row. So the instance that leads the delivery
 * housekeeping analyzes the tables that changed by more than autovacuum's own threshold (50 rows and 10 %) since
 * they were last analyzed. With autovacuum keeping up this finds nothing to do.
 */
import type { SQL } from "bun";

const TABLES = ["deliveries", "messages", "listeners", "attempts", "events"];

const STALE = `SELECT relname FROM pg_stat_user_tables
  WHERE schemaname = current_schema() AND relname = ANY($1::text[])
    AND n_mod_since_analyze > 50 + 0.1 * greatest(n_live_tup, 0)`;

/** Analyzes the tables whose statistics are stale; returns their names. */
export async function refreshStatistics(client: SQL): Promise<string[]> {
  const stale: { relname: string }[] = await client.unsafe(STALE, [TABLES]);
  for (const { relname } of stale) await client.unsafe(`ANALYZE ${relname}`);
  return stale.map((t) => t.relname);
}
