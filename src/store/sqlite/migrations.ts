/**
 * Applies the embedded drizzle-kit migrations. Bookkeeping uses drizzle's own `__drizzle_migrations` table, so
 * drizzle-kit agrees on what is applied. Unlike drizzle's migrator this takes the write lock (BEGIN IMMEDIATE)
 * before reading what is applied, so a server and an `orgs create` starting together cannot both apply one.
 */
import type { Database } from "bun:sqlite";
import { migrations } from "./migrations.gen.ts";

export function applyMigrations(db: Database): number {
  db.run(`CREATE TABLE IF NOT EXISTS __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  db.run("BEGIN IMMEDIATE");
  try {
    const last = db.query<{ at: number }, []>("SELECT max(created_at) AS at FROM __drizzle_migrations").get()?.at ?? 0;
    let applied = 0;
    for (const m of migrations) {
      if (Number(last) >= m.when) continue;
      for (const stmt of m.sql.split("--> statement-breakpoint")) if (stmt.trim()) db.run(stmt);
      const hash = new Bun.CryptoHasher("sha256").update(m.sql).digest("hex");
      db.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", [hash, m.when]);
      applied++;
    }
    db.run("COMMIT");
    return applied;
  } catch (e) {
    db.run("ROLLBACK");
    throw e;
  }
}
