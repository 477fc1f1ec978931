/**
 * Whether the database can be written. SQLite's errors that mean it cannot become one StorageUnavailable
 * (lib/errors.ts), so nothing above the store looks at SQLite's codes:
 *   SQLITE_FULL        the disk (or its quota) is full; a COMMIT that hits it has rolled back;
 *   SQLITE_READONLY*   the file, or the connection, cannot be written;
 *   SQLITE_IOERR*      a read or write of the files failed (also a file system made read-only under an open file);
 *   SQLITE_CANTOPEN    a file of the database (the WAL, a temporary file) could not be created.
 * Any of these may leave the connection inside a transaction SQLite did not roll back; `rollBackLeftover` ends it,
 * so the next BEGIN starts clean. SQLite itself keeps the WAL and the -shm consistent: a frame that did not reach
 * the WAL was never committed.
 */
import type { Database } from "bun:sqlite";
import { AppError, StorageUnavailable } from "../../lib/errors.ts";

const REASONS: [prefix: string, reason: string][] = [
  ["SQLITE_FULL", "disk full"],
  ["SQLITE_READONLY", "read-only"],
  ["SQLITE_IOERR", "I/O error"],
  ["SQLITE_CANTOPEN", "cannot open a database file"],
];

/** The StorageUnavailable `error` stands for, or null when it is not a storage error. */
export function storageFailure(error: unknown): StorageUnavailable | null {
  if (error instanceof StorageUnavailable) return error;
  if (error instanceof AppError || !(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return null;
  const match = REASONS.find(([prefix]) => code.startsWith(prefix));
  return match ? new StorageUnavailable(match[1], `${code}: ${error.message}`) : null;
}

/** `error` as the store throws it: a storage error as StorageUnavailable, anything else as it is. */
export const asStorageError = (error: unknown): unknown => storageFailure(error) ?? error;

/**
 * Ends a transaction a failed statement left open (an I/O error may). Never throws: a ROLLBACK that fails is
 * tried again before the next BEGIN, and the error that brought the caller here is the one to report.
 */
export function rollBackLeftover(sqlite: Database): void {
  try {
    if (sqlite.inTransaction) sqlite.run("ROLLBACK");
  } catch {
    // A closed connection, or a ROLLBACK that failed: nothing more to do here (above).
  }
}

/**
 * The smallest real write (readiness, outage probes): one row changed, so it commits only where a write can. The
 * value always changes, since SQLite writes nothing for a row set to what it holds (a clock that did not move).
 */
export function writeReadiness(sqlite: Database, now: number): void {
  sqlite
    .query(`INSERT INTO readiness (id, checked_at) VALUES (1, ?)
      ON CONFLICT (id) DO UPDATE SET checked_at = max(excluded.checked_at, readiness.checked_at + 1)`)
    .run(now);
}
