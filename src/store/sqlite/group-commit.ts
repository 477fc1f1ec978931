/**
 * Group commit: the writes that arrive together (one turn of the event loop) share one IMMEDIATE transaction,
 * and each caller's promise settles only after that transaction commits, so a 200 still means "committed".
 * SQLite pays for a commit, not for a row: with a few dozen publishes per transaction the WAL append and the
 * locking are paid once.
 *
 * - Each unit runs inside its own SAVEPOINT: a unit that throws (unknown queue, duplicate name, schema changed)
 *   is rolled back alone and its caller gets the error; the others commit.
 * - A `checked` unit runs without one: it makes all its checks before its first write, so an AppError from it
 *   means it wrote nothing. Any other error (SQLite's own) may come after a write, and then the whole batch is
 *   rolled back and every caller in it gets the error, as when COMMIT fails. A publish is such a unit: SQLite
 *   copies every page a unit changes into the savepoint's journal first, and consecutive publishes change the
 *   same few pages.
 * - A unit that may change many rows (a delete that cascades) runs `alone`: in a transaction of its own, without
 *   a SAVEPOINT. SQLite keeps the original of every page a savepoint changes, in memory here (temp_store, db.ts),
 *   so a large delete inside one raised the peak memory by tens of megabytes, which the process kept.
 * - The write lock is taken without blocking the event loop. bun:sqlite's busy handler sleeps on the calling
 *   thread, which on the main thread freezes every request while the delivery worker holds the lock. So BEGIN
 *   IMMEDIATE is tried with busy_timeout 0, and a busy database is retried while more writes join the batch:
 *   as soon as another writer signals that it gave the lock back (lock-signal.ts), or after 1 ms; after
 *   `busyTimeoutMs` the batch fails with 503.
 * - When the database cannot be written (writability.ts), the failure is what every caller it reaches gets, as
 *   `failed` maps it (StorageUnavailable, 503). A full disk usually fails the COMMIT, which SQLite has rolled back;
 *   a statement that fails on it, or on an I/O error, may have rolled back the whole transaction, savepoints
 *   included, so the batch is doomed then; a transaction SQLite left open is rolled back before the next BEGIN.
 */
import type { Database } from "bun:sqlite";
import { AppError, unavailable } from "../../lib/errors.ts";
import { isBusy } from "./write-lock.ts";
import { rollBackLeftover } from "./writability.ts";
import type { LockSignal } from "./lock-signal.ts";

export type UnitMode = "guarded" | "checked" | "alone";
type Unit = { run: () => unknown; resolve: (value: any) => void; reject: (error: unknown) => void; mode: UnitMode };

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

function outcomeOf(run: () => unknown): Outcome {
  try {
    return { ok: true, value: run() };
  } catch (error) {
    return { ok: false, error };
  }
}

const MAX_BATCH = 1024;
const RETRY_MS = 1;

export class GroupCommit {
  private pending: Unit[] = [];
  private scheduled = false;
  private busySince: number | null = null;

  /**
   * `onBegin` runs when a batch's transaction has started, before its units: for memos valid only within it.
   * `failed` turns an error into the one its callers get (writability.ts `asStorageError`, and the outage's count).
   */
  constructor(
    private readonly sqlite: Database,
    private readonly busyTimeoutMs: number,
    private readonly onBegin: () => void = () => {},
    private readonly signal?: LockSignal,
    private readonly failed: (error: unknown) => unknown = (error) => error,
  ) {}

  /**
   * Runs `fn` in the next batch's transaction; settles after that transaction commits (or fails). `guarded` runs
   * it in a savepoint of its own, `checked` without one (above); `alone` runs it in a transaction of its own,
   * without a savepoint, after the units that came before it.
   */
  run<T>(fn: () => T, mode: UnitMode = "guarded"): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run: fn, resolve, reject, mode });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    if (!this.begin()) return;
    const alone = this.pending[0]!.mode === "alone";
    const end = alone ? 1 : this.pending.findIndex((unit) => unit.mode === "alone");
    const batch = this.pending.splice(0, Math.min(end === -1 ? this.pending.length : end, MAX_BATCH));
    try {
      this.commit(batch, alone);
    } catch (error) {
      // A savepoint statement failed under a unit (the connection is broken): nothing in the batch committed.
      rollBackLeftover(this.sqlite);
      const failure = this.failed(error);
      for (const unit of batch) unit.reject(failure);
    }
    this.reschedule(0);
  }

  private commit(batch: Unit[], alone: boolean): void {
    const done: Outcome[] = [];
    let doomed: Outcome | undefined; // a failure that may have left half a unit behind: the batch cannot commit
    for (const unit of batch) {
      const outcome = alone ? outcomeOf(unit.run) : this.runUnit(unit);
      done.push(outcome);
      if (!outcome.ok && this.dooms(unit, outcome.error, alone)) {
        doomed = outcome;
        break;
      }
    }
    // Alone, the unit is the transaction: its failure rolls the whole of it back, as a failed COMMIT does.
    const committed = doomed ?? outcomeOf(() => this.sqlite.run("COMMIT"));
    if (!committed.ok) {
      // A failed COMMIT may already have rolled back (SQLITE_FULL, I/O errors); a second ROLLBACK would throw.
      rollBackLeftover(this.sqlite);
      const failure = this.failed(committed.error);
      for (const unit of batch) unit.reject(failure);
    } else {
      batch.forEach((unit, i) => {
        const outcome = done[i]!;
        if (outcome.ok) unit.resolve(outcome.value);
        else unit.reject(this.failed(outcome.error));
      });
    }
  }

  /** Whether a unit's failure leaves the batch unable to commit (the module comment, and a rolled-back transaction). */
  private dooms(unit: Unit, error: unknown, alone: boolean): boolean {
    return alone || !this.sqlite.inTransaction || (unit.mode === "checked" && !(error instanceof AppError));
  }

  /**
   * BEGIN IMMEDIATE without waiting; false when it did not start: busy (a retry is scheduled, or the batch timed
   * out) or failed outright. Any failure settles the waiting writes: this runs in a timer callback, where a throw
   * would take the process down and leave every caller waiting.
   */
  private begin(): boolean {
    const released = this.signal?.count ?? 0; // before trying: a release after this wakes the retry at once
    rollBackLeftover(this.sqlite);
    this.sqlite.run("PRAGMA busy_timeout = 0");
    try {
      this.sqlite.run("BEGIN IMMEDIATE");
      this.busySince = null;
      this.onBegin();
      return true;
    } catch (e) {
      if (!isBusy(e)) {
        const failure = this.failed(e);
        for (const unit of this.pending.splice(0)) unit.reject(failure);
        return false;
      }
      const now = performance.now();
      this.busySince ??= now;
      if (now - this.busySince > this.busyTimeoutMs) {
        this.busySince = null;
        for (const unit of this.pending.splice(0)) unit.reject(unavailable("The database stayed locked; try again."));
        return false;
      }
      this.retry(released);
      return false;
    } finally {
      this.sqlite.run(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
    }
  }

  // Through bun:sqlite's statement cache: Database.run compiles its SQL on every call, twice per publish here.
  private runUnit(unit: Unit): Outcome {
    if (unit.mode === "checked") return outcomeOf(unit.run);
    this.sqlite.query("SAVEPOINT unit").run();
    const outcome = outcomeOf(unit.run);
    if (!outcome.ok) {
      if (!this.sqlite.inTransaction) return outcome; // SQLite rolled the transaction back, savepoints included
      this.sqlite.query("ROLLBACK TO unit").run();
    }
    this.sqlite.query("RELEASE unit").run();
    return outcome;
  }

  private retry(released: number): void {
    if (!this.signal) return this.reschedule(RETRY_MS);
    this.scheduled = true;
    this.signal.releasedSince(released, RETRY_MS).then(() => this.flush());
  }

  private reschedule(delayMs: number): void {
    if (this.scheduled || this.pending.length === 0) return;
    this.scheduled = true;
    if (delayMs === 0) setImmediate(() => this.flush());
    else setTimeout(() => this.flush(), delayMs);
  }
}
