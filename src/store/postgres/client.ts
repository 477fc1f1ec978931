/**
 * Connections to PostgreSQL through Bun's built-in client (`bun` SQL), with Drizzle over it (drizzle-orm/bun-sql).
 * Chosen over postgres.js and pg (docs/postgres.md): it runs inside the compiled binary without a dependency, was
 * the fastest of the three here, re-subscribes LISTEN by itself after a reconnect, survives a server restart with
 * a session reserved, and keeps the password out of its errors.
 *
 * Every option is given explicitly (url.ts): Bun lets PGDATABASE and friends win over a URL, not over options.
 * Integers of type bigint come back as strings from raw queries; Drizzle's bigint columns (mode "number") turn them
 * into numbers, and the raw hot paths do it themselves.
 */
import { SQL } from "bun";
import { drizzle, type BunSQLDatabase } from "drizzle-orm/bun-sql";
import * as schema from "./schema.ts";
import { describeTarget, type PostgresTarget } from "./url.ts";

export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL };
/** Drizzle's transaction handle, or the database itself: what a read or a unit of work runs on. */
export type PgTx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

/** How long a new connection may take; past it a request gets 503 instead of waiting on a dead host. */
const CONNECT_TIMEOUT_S = 5;

/**
 * `settings`: runtime parameters for every connection of this client (the delivery worker's commit without
 * waiting for the WAL flush, worker-store.ts).
 */
export function openClient(target: PostgresTarget, max: number, role: string, settings: Record<string, string> = {}): SQL {
  return new SQL({
    adapter: "postgres",
    hostname: target.hostname,
    port: target.port,
    username: target.username,
    password: target.password,
    database: target.database,
    tls: target.sslmode,
    max,
    connectionTimeout: CONNECT_TIMEOUT_S,
    connection: { application_name: `fanout ${role}`, ...settings },
  });
}

export function drizzleOf(client: SQL): PgDb {
  return drizzle({ client, schema }) as PgDb;
}

/** The database could not be used at start (unreachable, refused the login, does not exist): main.ts exits 2. */
export class DatabaseUnreachable extends Error {
  override name = "DatabaseUnreachable";
}

/**
 * Tries one query, so a wrong URL, a server that is down or a login it refuses is reported at start in one line
 * without the password (the driver's messages carry none).
 */
export async function checkReachable(client: SQL, target: PostgresTarget): Promise<void> {
  try {
    await client`SELECT 1`;
  } catch (e) {
    const { message, code } = e as Error & { code?: string };
    throw new DatabaseUnreachable(`cannot use PostgreSQL at ${describeTarget(target)}: ${message || code || "connection failed"}`);
  }
}

/** bigint columns read through raw SQL arrive as strings; null stays null. */
export const num = (v: unknown): number => Number(v);
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
