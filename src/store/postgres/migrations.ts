/**
 * Applies the embedded drizzle-kit migrations (drizzle/postgres/). Bookkeeping is drizzle's own
 * `drizzle.__drizzle_migrations`, so drizzle-kit agrees on what is applied. The whole run holds an advisory lock on
 * one reserved connection: instances starting together wait for the first, then find nothing left to apply. Each
 * migration commits with its bookkeeping row, in one transaction.
 *
 * A database that a newer fanout migrated is refused before anything is written (store/newer-database.ts), under
 * the lock: an older instance that waited there for a newer one refuses the schema the newer one just made.
 */
import type { SQL } from "bun";
import { migrations } from "./migrations.gen.ts";
import { LOCK_NAMESPACE, LOCKS } from "./locks.ts";
import { refuseNewer, type AppliedRow } from "../newer-database.ts";
import { fullVersion } from "../../version.ts";

const NEWEST = migrations.at(-1)!.when;

export async function applyMigrations(client: SQL): Promise<number> {
  const session = await client.reserve();
  try {
    await session`SELECT pg_advisory_lock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
    try {
      await session`CREATE SCHEMA IF NOT EXISTS drizzle`;
      await session`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
      const newer: AppliedRow[] = await session`SELECT * FROM drizzle.__drizzle_migrations WHERE created_at > ${NEWEST} ORDER BY created_at DESC`;
      if (newer.length > 0) refuseNewer(`${(await session`SELECT current_database() AS name`)[0].name} (PostgreSQL)`, newer);
      const [row] = await session`SELECT coalesce(max(created_at), 0) AS at FROM drizzle.__drizzle_migrations`;
      const pending = migrations.filter((m) => Number(row.at) < m.when);
      if (pending.length > 0) await session`ALTER TABLE drizzle.__drizzle_migrations ADD COLUMN IF NOT EXISTS fanout_version text`;
      for (const m of pending) {
        const hash = new Bun.CryptoHasher("sha256").update(m.sql).digest("hex");
        await session.begin(async (tx) => {
          for (const stmt of m.sql.split("--> statement-breakpoint")) if (stmt.trim()) await tx.unsafe(stmt);
          await tx`INSERT INTO drizzle.__drizzle_migrations (hash, created_at, fanout_version) VALUES (${hash}, ${m.when}, ${fullVersion()})`;
        });
      }
      return pending.length;
    } finally {
      await session`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
    }
  } finally {
    await session.release();
  }
}
