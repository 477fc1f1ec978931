/**
 * Errors out of the PostgreSQL driver, turned into what the rest of fanout understands before anything can log
 * them. Drizzle's own errors carry the query's parameters in their message (`Failed query: … params: …`), message
 * payloads and key hashes included, so no driver or Drizzle error leaves the store as it is:
 * - the server unreachable, restarting, refusing connections, out of disk or read-only: StorageUnavailable (503
 *   with Retry-After), as SQLite's full disk, so the API answers it and the delivery worker pauses on it alike
 *   (store/outage.ts);
 * - anything else: a DatabaseError that says the SQLSTATE and the server's message, and nothing of the query.
 * Bun's client puts its own code in `code` (ERR_POSTGRES_…) and the server's SQLSTATE in `errno`.
 */
import { DrizzleQueryError } from "drizzle-orm/errors";
import { AppError, StorageUnavailable } from "../../lib/errors.ts";

export class DatabaseError extends Error {
  override name = "DatabaseError";
  constructor(readonly sqlState: string | undefined, message: string) {
    super(sqlState ? `PostgreSQL ${sqlState}: ${message}` : `PostgreSQL: ${message}`);
  }
}

type DriverError = Error & { code?: string; errno?: string };

/** The driver's error under Drizzle's wrapper, if any. */
function driverError(e: unknown): DriverError | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if ((current as DriverError).code?.startsWith("ERR_POSTGRES_")) return current as DriverError;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The SQLSTATE of a server error, or undefined (a connection error, or not a driver error). Bun names some server
 * errors with codes of their own (ERR_POSTGRES_SYNTAX_ERROR) beside ERR_POSTGRES_SERVER_ERROR; all carry `errno`.
 */
export function sqlStateOf(e: unknown): string | undefined {
  if (e instanceof DatabaseError) return e.sqlState;
  const errno = driverError(e)?.errno;
  return typeof errno === "string" && /^[0-9A-Z]{5}$/.test(errno) ? errno : undefined;
}

// Class 08: connection exception; 57P01-57P03: the server shutting down or starting; 53: out of resources
// (too many connections, disk full); 58: system errors; 25006: a read-only transaction (a standby, or
// default_transaction_read_only).
const UNAVAILABLE_STATES = /^(08|57P0[1-3]$|53|58|25006$)/;
/** Bun's own codes for a connection that could not be made or was lost. */
const CONNECTION_CODES = /^ERR_POSTGRES_(CONNECTION_|IDLE_TIMEOUT|LIFETIME_TIMEOUT|TLS_)/;

/** Whether `e` says the server cannot be reached or cannot take the work now (as opposed to a refused query). */
export function isUnavailable(e: unknown): boolean {
  const d = driverError(e);
  if (!d) return false;
  const state = sqlStateOf(e);
  return state ? UNAVAILABLE_STATES.test(state) : CONNECTION_CODES.test(d.code ?? "");
}

/** The few words StorageUnavailable names the cause with (one log line per cause: lib/log-events.ts). */
function cause(state: string | undefined): string {
  if (state === "53100") return "disk full";
  if (state === "53300") return "too many connections";
  if (state === "25006") return "read-only database";
  if (state?.startsWith("53") || state?.startsWith("58")) return "database server out of resources";
  return "database unreachable";
}

/** Deadlocks, serialization failures and a row that a concurrent statement removed under a foreign key. */
export const isRetryable = (e: unknown) => ["40P01", "40001", "23503"].includes(sqlStateOf(e) ?? "");

/** What a store function throws instead of `e`: AppErrors pass, the rest is mapped (above). */
export function storeError(e: unknown): Error {
  if (e instanceof AppError || e instanceof DatabaseError) return e;
  const d = driverError(e);
  if (d && isUnavailable(e)) return new StorageUnavailable(cause(sqlStateOf(e)), d.message);
  if (d) return new DatabaseError(sqlStateOf(e), d.message);
  // Not the driver's: a Drizzle error without a driver cause still carries the query text, so only its kind is kept.
  return e instanceof DrizzleQueryError ? new DatabaseError(undefined, "a query failed") : (e as Error);
}

/** Runs `fn`, mapping whatever it throws (storeError). */
export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw storeError(e);
  }
}
