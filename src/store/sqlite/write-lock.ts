/**
 * Waiting for SQLite's write lock without freezing a thread. bun:sqlite's busy handler sleeps on the calling
 * thread (1, 2, 5, 10 … ms), and nothing else runs there meanwhile: on the delivery worker that stalled every
 * send and result while a publish batch held the lock, which is what the publish-to-received tail was made of.
 * So a write is tried with busy_timeout 0, and a busy database is tried again after a short timer while the
 * event loop goes on; after the connection's own timeout the error stands.
 */
import type { Database } from "bun:sqlite";
import { BUSY_TIMEOUT_MS } from "./db.ts";
import type { LockSignal } from "./lock-signal.ts";

const RETRY_MS = 1;

export const isBusy = (e: unknown) =>
  e instanceof Error && /SQLITE_BUSY|database is locked/i.test(`${(e as { code?: string }).code} ${e.message}`);

/**
 * Runs `write` (a transaction or one statement, all or nothing) once the write lock is free. `signal` is told
 * when the lock was given back, for the API thread's group commit waiting on it (lock-signal.ts).
 */
export async function whenUnlocked<T>(sqlite: Database, write: () => T, signal?: LockSignal, timeoutMs = BUSY_TIMEOUT_MS): Promise<T> {
  const started = performance.now();
  for (;;) {
    sqlite.run("PRAGMA busy_timeout = 0");
    let held = true;
    try {
      return write();
    } catch (e) {
      held = !isBusy(e); // a busy write never had the lock; any other ending did
      if (held || performance.now() - started >= timeoutMs) throw e;
    } finally {
      if (held) signal?.released();
      sqlite.run(`PRAGMA busy_timeout = ${timeoutMs}`);
    }
    await Bun.sleep(RETRY_MS);
  }
}
