/**
 * Applies the embedded drizzle-kit migrations. Bookkeeping uses drizzle's own `__drizzle_migrations` table, so
 * drizzle-kit agrees on what is applied. Unlike drizzle's migrator this takes the write lock (BEGIN IMMEDIATE)
 * before reading what is applied, so a server and an `orgs create` starting together cannot both apply one.
 *
 * Foreign keys are off while migrations run, and checked before the commit (SQLite's procedure for schema
 * changes). drizzle-kit changes a table by copying it into a new one and dropping the old: with foreign keys
 * on, that DROP would cascade and delete every row that refers to the old table (a message's deliveries). The
 * `PRAGMA foreign_keys` lines drizzle-kit writes into a migration do nothing inside a transaction, so the
 * switch happens here, outside it.
 *
 * A database that a newer fanout migrated is refused before anything is written (store/newer-database.ts).
 */
import type { Database } from "bun:sqlite";
import { migrations } from "./migrations.gen.ts";
import { refuseNewer, type AppliedRow } from "../newer-database.ts";
import { fullVersion } from "../../version.ts";

const NEWEST = migrations.at(-1)!.when;

export function applyMigrations(db: Database): number {
  db.run(`CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  const foreignKeys = db.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()?.foreign_keys === 1;
  db.run("PRAGMA foreign_keys = OFF");
  db.run("BEGIN IMMEDIATE");
  try {
    const newer = db.query<AppliedRow, [number]>("SELECT * FROM __drizzle_migrations WHERE created_at > ? ORDER BY created_at DESC").all(NEWEST);
    refuseNewer(db.filename, newer);
    const last = db.query<{ at: number }, []>("SELECT max(created_at) AS at FROM __drizzle_migrations").get()?.at ?? 0;
    const pending = migrations.filter((m) => Number(last) < m.when);
    if (pending.length > 0) addVersionColumn(db);
    for (const m of pending) {
      for (const stmt of m.sql.split("--> statement-breakpoint")) if (stmt.trim()) db.run(stmt);
      const hash = new Bun.CryptoHasher("sha256").update(m.sql).digest("hex");
      db.run("INSERT INTO __drizzle_migrations (hash, created_at, fanout_version) VALUES (?, ?, ?)", [hash, m.when, fullVersion()]);
    }
    // Only after a migration ran: the check reads every row of every table, too slow for each start of a large database.
    const broken = pending.length > 0 ? db.query<{ table: string }, []>("PRAGMA foreign_key_check").all() : [];
    if (broken.length > 0) throw new Error(`a migration left rows whose foreign keys point nowhere (table ${broken[0]!.table})`);
    db.run("COMMIT");
    return pending.length;
  } catch (e) {
    db.run("ROLLBACK");
    throw e;
  } finally {
    if (foreignKeys) db.run("PRAGMA foreign_keys = ON");
  }
}

/** Added by the first fanout that records who migrated (drizzle's migrator ignores columns it does not write). */
function addVersionColumn(db: Database): void {
  const columns = db.query<{ name: string }, []>("PRAGMA table_info(__drizzle_migrations)").all();
  if (!columns.some((c) => c.name === "fanout_version")) db.run("ALTER TABLE __drizzle_migrations ADD COLUMN fanout_version text");
}
