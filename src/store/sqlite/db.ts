/**
 * Opening a SQLite connection on purpose:
 * - WAL, so readers never wait for the writer and a commit is one sequential append;
 * - synchronous=NORMAL by default: in WAL mode a committed transaction survives a process crash (kill -9),
 *   only an OS crash or power loss can lose the last commits. `--durability full` buys power-loss durability
 *   with an fsync per commit (bun:sqlite's own default is FULL, many times slower on small transactions);
 * - busy_timeout, because the delivery worker and CLI commands hold their own connections to the same file;
 * - foreign keys on, so deleting a queue removes its listeners, messages, deliveries and attempts;
 * - temporary storage in memory (below).
 * `:memory:` is a throwaway database in a temporary file (removed on close): the worker thread needs a second
 * connection to the same data, which a true in-memory database cannot give.
 */
import { Database } from "bun:sqlite";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { tmpdir } from "node:os";
import { randomBase62 } from "../../lib/ids.ts";

export type Durability = "normal" | "full";
/** How long a write waits for the lock held by another connection (the worker, a CLI command). */
export const BUSY_TIMEOUT_MS = 5000;
export type DbLocation = { path: string; temporary: boolean };

export function resolveLocation(db: string): DbLocation {
  if (db === ":memory:") return { path: join(tmpdir(), `fanout-${process.pid}-${randomBase62(8)}.db`), temporary: true };
  return { path: db, temporary: false };
}

/**
 * No connection checkpoints by itself: SQLite's automatic checkpoints run inside whichever commit crosses the
 * threshold (a copy and an fsync that request, or every send of the delivery worker, waits for) and, being
 * PASSIVE, let the WAL grow without bound under constant ingest. The store's connection checkpoints on a
 * timer instead (checkpoints.ts), for every connection to the file.
 */
export function openDatabase(path: string, durability: Durability, temporary = false): Database {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { create: true, strict: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run(`PRAGMA synchronous = ${temporary ? "OFF" : durability === "full" ? "FULL" : "NORMAL"}`);
  db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.run("PRAGMA foreign_keys = ON");
  db.run("PRAGMA wal_autocheckpoint = 0");
  // A WAL that a checkpoint could not cut (a long reader) is still cut back to this size once it restarts.
  db.run("PRAGMA journal_size_limit = 67108864");
  // Each unit of a group commit runs in a SAVEPOINT, and SQLite keeps the pages a unit changes in a sub-journal
  // that spills to a temporary file past 64 KiB: a file opened, written and closed on every commit. In memory,
  // RAM holds what one transaction changes, and the temporary b-trees of sorts without an index.
  db.run("PRAGMA temp_store = MEMORY");
  return db;
}

/**
 * The database holds listener signing secrets, so its files are the owner's only (0600), as the TLS key is.
 * SQLite gives the -wal and -shm files it creates the database file's mode; files made by an older version are
 * narrowed here. Only before this process first opens the database: closing any descriptor of a file drops every
 * POSIX lock the process holds on it, SQLite's own included (the checkpointer's -shm read had that bug).
 */
export function makePrivate(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  createPrivateFile(path);
  for (const file of [`${path}-wal`, `${path}-shm`]) if (existsSync(file)) narrow(file);
}

/** Creates `path` empty with mode 0600 if missing, else narrows its mode; the same rule as makePrivate applies. */
export function createPrivateFile(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, "wx", 0o600));
  narrow(path);
}

function narrow(path: string): void {
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
}

export function removeTemporary(location: DbLocation): void {
  if (!location.temporary) return;
  for (const suffix of ["", "-wal", "-shm"]) rmSync(location.path + suffix, { force: true });
}
