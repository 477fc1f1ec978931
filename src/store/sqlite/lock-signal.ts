/**
 * A counter in shared memory that the other writers of the database file (the delivery worker, the checkpoint
 * thread) bump each time they give back SQLite's write lock, so that the API thread's group commit, finding the
 * lock busy, tries again the moment it is free instead of after a timer.
 *
 * SQLite has no wake-up of its own: a busy BEGIN is retried by sleeping (bun:sqlite's busy handler) or, here,
 * on a 1 ms timer. The worker holds the lock a fraction of a millisecond per step, so waiting out a timer cost
 * the publishes in the batch several times what the worker took.
 * Only the API thread waits on the signal. The worker keeps its timer: handing the lock to every waiter at once
 * gives the worker more turns and ingest less.
 */
export class LockSignal {
  private readonly cell: Int32Array;

  constructor(readonly buffer = new SharedArrayBuffer(4)) {
    this.cell = new Int32Array(buffer);
  }

  /** How many times the lock was given back so far; read it before trying the lock. */
  get count(): number {
    return Atomics.load(this.cell, 0);
  }

  /** This connection's write transaction ended (committed or rolled back). */
  released(): void {
    Atomics.add(this.cell, 0, 1);
    Atomics.notify(this.cell, 0);
  }

  /** Settles once the lock was given back after `count` was read, or after `ms` at the latest. */
  async releasedSince(count: number, ms: number): Promise<void> {
    const wait = Atomics.waitAsync(this.cell, 0, count, ms);
    if (wait.async) await wait.value;
  }
}
