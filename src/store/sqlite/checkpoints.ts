/**
 * Keeps the WAL bounded from one connection, on a timer: in the server, the checkpoint thread's (checkpointer.ts);
 * for CLI commands and tests, the store's own (store/sqlite/index.ts). No connection checkpoints inside its
 * commits (db.ts), the delivery worker's included: a checkpoint blocks the thread it runs on for as long as it
 * copies, and on the worker or the API thread that stall lands in every delivery or request waiting meanwhile.
 * It checkpoints in two steps:
 * - PASSIVE copies the WAL into the database file without the write lock, so writers go on committing.
 *   Alone it is not enough: under constant ingest it never catches up, so the WAL never restarts and grows
 *   without bound.
 * - RESTART then takes the write lock, copies only what was committed during the first step, and makes the next
 *   commit write the WAL from its start again. Alone it would hold the lock for the whole copy.
 * Under load the WAL file is reused, not cut: cutting it (TRUNCATE) makes every commit extend the file again, and
 * extending a file by frames of 4,120 bytes makes the kernel allocate and zero each new page, on the committing
 * thread. Only an idle WAL, everything in it copied and nothing new since the last look, is cut to nothing, so a
 * quiet service leaves no WAL behind. journal_size_limit (db.ts) still caps what a restart keeps.
 * RESTART and TRUNCATE wait for readers, so they get a short busy timeout of their own: a long reader (a backup,
 * a large list) then leaves the checkpoint partial for this round (reported as a row, not an error) instead of
 * stalling this thread for the connection's full 5 s.
 * A checkpoint starts when the WAL holds 4 MiB not yet copied (SQLite's own threshold is 1000 pages), checked
 * often, and at least every 500 ms: a clock alone lets a burst of publishes pile up frames between two ticks.
 * After a partial (busy) round only the clock starts the next one, so a long reader does not make this thread
 * wait every tick. (docs/performance.md, "Checkpoints", has the figures behind these choices.)
 */
import type { Database } from "bun:sqlite";
import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";
import { endianness } from "node:os";
import { BUSY_TIMEOUT_MS } from "./db.ts";
import type { LockSignal } from "./lock-signal.ts";
import { storageFailure } from "./writability.ts";

const CHECKPOINT_EVERY_MS = 500;
const CHECKPOINT_WAIT_MS = 100;
const WAL_CHECK_EVERY_MS = 50;
const CHECKPOINT_AT_BYTES = 4 * 1024 * 1024;
/** A WAL frame is a 24-byte header and one page. */
const FRAME_HEADER_BYTES = 24;

/** The WAL file's size; 0 when there is none yet. A stat is cheap beside a checkpoint. */
export function walBytes(dbPath: string): number {
  try {
    return statSync(`${dbPath}-wal`).size;
  } catch {
    return 0; // no WAL file yet: nothing to checkpoint
  }
}

export type WalLog = { frames: number; copied: number; pageSize: number };

const header = Buffer.alloc(100);
const LE = endianness() === "LE";
const u32 = (at: number) => (LE ? header.readUInt32LE(at) : header.readUInt32BE(at));
const u16 = (at: number) => (LE ? header.readUInt16LE(at) : header.readUInt16BE(at));

/**
 * Descriptors of -shm files, opened once and kept open. POSIX drops every fcntl lock a process holds on a file
 * when the process closes any descriptor of that file, and SQLite's locks on the wal-index are such locks. A
 * descriptor opened and closed for each read released them all. Another process opening the database (a CLI
 * command, a test's own connection) then found the wal-index unused and reset it under the server, which died
 * of a Bus error and risked the WAL itself. One descriptor is kept
 * per -shm file a thread reads. It is closed only once the file is unlinked: SQLite holds no lock on that
 * inode any more.
 */
const shmFds = new Map<string, number>();

function shmFd(dbPath: string): number | null {
  const known = shmFds.get(dbPath);
  if (known !== undefined && fstatSync(known).nlink > 0) return known;
  if (known !== undefined) closeSync(known);
  shmFds.delete(dbPath);
  try {
    const fd = openSync(`${dbPath}-shm`, "r");
    shmFds.set(dbPath, fd);
    return fd;
  } catch {
    return null;
  }
}

/**
 * How far the WAL has been written and copied, from the wal-index header at the start of the -shm file
 * (https://www.sqlite.org/walformat.html, in native byte order): mxFrame at byte 16, the page size at 14 (1 means
 * 65,536) and nBackfill at 96. The file size no longer says it once the WAL is reused. One read of 100 bytes,
 * taken without a lock: a torn read only misjudges one tick. null when there is no such file yet.
 */
export function walLog(dbPath: string): WalLog | null {
  const fd = shmFd(dbPath);
  if (fd === null || readSync(fd, header, 0, header.length, 0) < header.length) return null;
  const page = u16(14);
  return { frames: u32(16), copied: u32(96), pageSize: page === 1 ? 65_536 : page };
}

/** Bytes of WAL not yet copied into the database file; when the -shm cannot tell, the whole file counts. */
function uncopiedBytes(dbPath: string): number {
  const log = walLog(dbPath);
  if (!log) return walBytes(dbPath);
  return Math.max(0, log.frames - log.copied) * (log.pageSize + FRAME_HEADER_BYTES);
}

/**
 * Where a checkpoint's failure goes: `failed` once per cause while it lasts (twice a second would flood the log
 * of a full disk), `recovered` once when a checkpoint works again. The cause is writability.ts's reason ("disk
 * full"), or "checkpoint failed" for any other error.
 */
export type CheckpointReport = { failed(cause: string, error: unknown): void; recovered(cause: string): void };

/**
 * Starts the timer; returns its stop. `report` gets a checkpoint that failed (a full disk, an I/O error); the
 * timer goes on, so the next round tries again once the cause is gone. `keepAlive` is for the checkpoint
 * thread, which exists only for this timer; `signal` is told when RESTART or TRUNCATE gives back the write lock.
 */
export function startCheckpoints(sqlite: Database, dbPath: string, report: CheckpointReport,
  options: { keepAlive?: boolean; signal?: LockSignal } = {}): () => void {
  let lastCheckpoint = 0;
  let lastWasPartial = false;
  let quietTicks = 0;
  let failing: string | null = null;
  /** One locking checkpoint with the short busy timeout; true when readers kept it from finishing. */
  const locking = (mode: "RESTART" | "TRUNCATE") => {
    sqlite.run(`PRAGMA busy_timeout = ${CHECKPOINT_WAIT_MS}`);
    try {
      return sqlite.query<{ busy: number }, []>(`PRAGMA wal_checkpoint(${mode})`).get()?.busy === 1;
    } finally {
      options.signal?.released(); // it took the write lock
      sqlite.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  };
  /** One look at the WAL; true when a checkpoint ran (and worked). */
  const round = (at: number): boolean => {
    const uncopied = uncopiedBytes(dbPath);
    if (uncopied === 0) {
      // Copied already and quiet for a whole tick: cut the file, unless it is cut already. An empty
      // checkpoint is not free (it syncs the file), hence the size check first.
      if (++quietTicks !== 2 || walBytes(dbPath) === 0) return false;
      lastWasPartial = locking("TRUNCATE");
      return true;
    }
    quietTicks = 0;
    const due = at - lastCheckpoint >= CHECKPOINT_EVERY_MS || (!lastWasPartial && uncopied >= CHECKPOINT_AT_BYTES);
    if (!due) return false;
    lastCheckpoint = at;
    sqlite.run("PRAGMA wal_checkpoint(PASSIVE)");
    lastWasPartial = locking("RESTART");
    return true;
  };
  const timer = setInterval(() => {
    const at = performance.now();
    try {
      if (round(at) && failing !== null) {
        report.recovered(failing);
        failing = null;
      }
    } catch (e) {
      // A throw here would end the process from a timer. Only the clock starts the next try, so a lasting
      // failure is tried twice a second, not at every check.
      lastCheckpoint = at;
      lastWasPartial = true;
      const cause = storageFailure(e)?.reason ?? "checkpoint failed";
      if (cause === failing) return;
      if (failing !== null) report.recovered(failing);
      failing = cause;
      report.failed(cause, e);
    }
  }, WAL_CHECK_EVERY_MS);
  // A CLI command's store must not stay alive for this timer; the server is kept alive by its listener.
  if (!options.keepAlive) timer.unref();
  return () => clearInterval(timer);
}
