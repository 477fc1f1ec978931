/**
 * Applies the embedded drizzle-kit migrations (drizzle/postgres/). Bookkeeping is drizzle's own
 * `drizzle.__drizzle_migrations`, so drizzle-kit agrees on what is applied. The whole run holds an advisory lock on
 * one reserved connection: instances starting together wait for the first, then find nothing left to apply. Each
 * migration commits with its bookkeeping row, in one transaction.
 */
import type { SQL } from "bun";
import { migrations } from "./migrations.gen.ts";
import { LOCK_NAMESPACE, LOCKS } from "./locks.ts";

export async function applyMigrations(client: SQL): Promise<number> {
  const session = await client.reserve();
  try {
    await session`SELECT pg_advisory_lock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
    try {
      await session`CREATE SCHEMA IF NOT EXISTS drizzle`;
      await session`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
      const [row] = await session`SELECT coalesce(max(created_at), 0) AS at FROM drizzle.__drizzle_migrations`;
      const last = Number(row.at);
      let applied = 0;
      for (const m of migrations) {
        if (last >= m.when) continue;
        const hash = new Bun.CryptoHasher("sha256").update(m.sql).digest("hex");
        await session.begin(async (tx) => {
          for (const stmt of m.sql.split("--> statement-breakpoint")) if (stmt.trim()) await tx.unsafe(stmt);
          await tx`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${hash}, ${m.when})`;
        });
        applied++;
      }
      return applied;
    } finally {
      await session`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
    }
  } finally {
    await session.release();
  }
}
