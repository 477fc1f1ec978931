/**
 * Keeps the WAL bounded from one connection, on a timer: in the server, the checkpoint thread's (checkpointer.ts);
 * for CLI commands and tests, the store's own (store/sqlite/index.ts). No connection checkpoints inside its
 * commits (db.ts), the delivery worker's included. A checkpoint blocks the thread it runs on for as long as it
 * copies (2-30 ms, measured): on the delivery worker that stall landed in the publish-to-received delay (p99
 * 18-34 ms with it there, 16-18 ms off it, one listener at 2,600 publishes/s, alternating runs), and on the API
 * thread in every request (checkpointer.ts).
 * It checkpoints in two steps:
 * - PASSIVE copies the WAL into the database file without the write lock, so writers go on committing.
 *   Alone it is not enough: under constant ingest it never catches up, so the WAL never restarts and grows
 *   without bound (470 MB in 8 s, measured).
 * - TRUNCATE then takes the write lock, copies only what was committed during the first step, and cuts the
 *   file to zero, so the file's size measures what is left to copy. Alone it held the lock for the whole copy
 *   (~18 ms per 6 MB, measured), and publishes waited about 10 % of the time.
 * TRUNCATE also waits for readers, so it gets a short busy timeout of its own: a long reader (a backup, a large
 * list) then leaves the checkpoint partial for this round (reported as a row, not an error) instead of stalling
 * this thread for the connection's full 5 s.
 * A checkpoint starts when the WAL passes 4 MiB (SQLite's own threshold is 1000 pages), checked often, and at
 * least every 500 ms: a clock alone let a burst of publishes pile up 16k frames between two ticks, an 83 ms
 * stall. After a partial (busy) round only the clock starts the next one, so a long reader does not make this
 * thread wait every tick.
 */
import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { BUSY_TIMEOUT_MS } from "./db.ts";
import type { LockSignal } from "./lock-signal.ts";

const CHECKPOINT_EVERY_MS = 500;
const CHECKPOINT_WAIT_MS = 100;
const WAL_CHECK_EVERY_MS = 50;
const CHECKPOINT_AT_BYTES = 4 * 1024 * 1024;

/** The WAL file's size; 0 when there is none yet. A stat is cheap beside a checkpoint. */
export function walBytes(dbPath: string): number {
  try {
    return statSync(`${dbPath}-wal`).size;
  } catch {
    return 0; // no WAL file yet: nothing to checkpoint
  }
}

/**
 * Starts the timer; returns its stop. `report` gets a checkpoint that failed (a full disk, an I/O error); the
 * timer goes on, so the next round tries again once the cause is gone. `keepAlive` is for the checkpoint
 * thread, which exists only for this timer; `signal` is told when TRUNCATE gives back the write lock.
 */
export function startCheckpoints(sqlite: Database, dbPath: string, report: (error: unknown) => void,
  options: { keepAlive?: boolean; signal?: LockSignal } = {}): () => void {
  let lastCheckpoint = 0;
  let lastWasPartial = false;
  const timer = setInterval(() => {
    const at = performance.now();
    const wal = walBytes(dbPath);
    // An empty WAL needs nothing, and even an empty checkpoint syncs the database file (~6 ms measured).
    const due = wal > 0 && (at - lastCheckpoint >= CHECKPOINT_EVERY_MS || (!lastWasPartial && wal >= CHECKPOINT_AT_BYTES));
    if (!due) return;
    lastCheckpoint = at;
    try {
      sqlite.run("PRAGMA wal_checkpoint(PASSIVE)");
      sqlite.run(`PRAGMA busy_timeout = ${CHECKPOINT_WAIT_MS}`);
      try {
        lastWasPartial = sqlite.query<{ busy: number }, []>("PRAGMA wal_checkpoint(TRUNCATE)").get()?.busy === 1;
      } finally {
        options.signal?.released(); // TRUNCATE took the write lock
        sqlite.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      }
    } catch (e) {
      // A throw here would end the process from a timer. Only the clock starts the next try, so a lasting
      // failure is reported twice a second, not at every check.
      lastWasPartial = true;
      report(e);
    }
  }, WAL_CHECK_EVERY_MS);
  // A CLI command's store must not stay alive for this timer; the server is kept alive by its listener.
  if (!options.keepAlive) timer.unref();
  return () => clearInterval(timer);
}
