/**
 * One server per database file. Two `fanout serve` on one file would each run a delivery worker and a
 * checkpointer, and neither could tell a lease of the other's from one left by a crash. So a server holds, for
 * its whole life, SQLite's write lock on a small database beside the data (`<db>.server-lock`): the operating
 * system gives it back when the process ends, however it ends, so a crash leaves no stale lock. The lock database
 * also names its holder, for the refusal a second server prints. CLI commands do not take it: they work beside a
 * running server.
 *
 * While the lock is held, no other process delivers from the file: every `sending` lease found at start belongs
 * to a process that died, and is given back at once (serve.ts) instead of after it expires.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { createPrivateFile } from "./db.ts";
import { isBusy } from "./write-lock.ts";

export type ServerLock = { release(): void };

/** Thrown when another server holds the lock; its message names that server. */
export class ServerLockHeld extends Error {
  constructor(readonly dbPath: string, readonly holder: string) {
    super(`another fanout server is serving ${dbPath} (${holder}); stop it first, or give this one another --db`);
  }
}

type Holder = { pid: number; host: string; started_at: number };

/** Takes the lock for this process, or throws ServerLockHeld. */
export function lockServer(dbPath: string, now: number): ServerLock {
  const path = `${dbPath}.server-lock`;
  mkdirSync(dirname(path), { recursive: true });
  createPrivateFile(path);
  const db = new Database(path);
  try {
    db.run("PRAGMA busy_timeout = 0");
    db.run("PRAGMA journal_mode = MEMORY"); // no -journal file beside it
    db.run("CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, host TEXT NOT NULL, started_at INTEGER NOT NULL)");
    take(db);
    db.run("DELETE FROM holder");
    db.query("INSERT INTO holder (pid, host, started_at) VALUES (?, ?, ?)").run(process.pid, hostname(), now);
    db.run("COMMIT");
    // Held from here on. Readers can still read the holder (a RESERVED lock admits them); no writer gets in.
    take(db);
  } catch (error) {
    db.close();
    if (!isBusy(error)) throw error;
    throw new ServerLockHeld(dbPath, describe(path));
  }
  return { release: () => db.close() };
}

function take(db: Database): void {
  db.run("BEGIN IMMEDIATE");
}

/** Who holds the lock, as far as the lock database says. */
function describe(path: string): string {
  try {
    const db = new Database(path, { readonly: true });
    try {
      const holder = db.query<Holder, []>("SELECT pid, host, started_at FROM holder").get();
      return holder ? `pid ${holder.pid} on ${holder.host}, started ${new Date(holder.started_at).toISOString()}` : "holder unknown";
    } finally {
      db.close();
    }
  } catch (error) {
    return `holder unknown: ${(error as Error).message}`;
  }
}
