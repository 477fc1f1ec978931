/**
 * The writes of one process run in call order, the way SQLite's group commit runs them: a write sees every write
 * started before it (a publish started after a schema change is judged against the new schema), and publishes
 * that arrive together share one statement (publish.ts), the lever for ingest that a commit per request is not.
 * Every other write runs in a transaction of its own between them, alone.
 *
 * A batch or a transaction that failed for a reason a retry can cure (a deadlock with another instance, a row a
 * concurrent statement deleted under a foreign key) runs again, as it committed nothing. An unreachable database
 * fails the waiting writes with 503 (errors.ts); the next write tries again.
 */
import { isRetryable, storeError } from "./errors.ts";

const MAX_BATCH = 512;
const RETRIES = 3;
/**
 * Publish batches may overlap: the next one's inserts run while the last one waits for its commit. They share no
 * row but their organizations' event keys (events.ts), which they take in the same order, so they only queue there.
 */
const BATCHES_IN_FLIGHT = 2;

type Settle<T> = { resolve: (value: T) => void; reject: (error: unknown) => void };
type Batched<I, O> = Settle<O> & { kind: "batched"; input: I };
type Alone = Settle<unknown> & { kind: "alone"; run: () => Promise<unknown> };

export class Writer<I, O> {
  private readonly pending: (Batched<I, O> | Alone)[] = [];
  /** Batches whose statement has not answered yet; a transaction runs only when none has. */
  private batchesInFlight = 0;
  private aloneRunning = false;
  private scheduled = false;

  /** `runBatch` stores a batch of inputs in one statement and settles each, in order (an Error settles as a rejection). */
  constructor(private readonly runBatch: (inputs: I[]) => Promise<(O | Error)[]>) {}

  /** Joins the next batch; settles after its statement committed. */
  batched(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => this.enqueue({ kind: "batched", input, resolve, reject }));
  }

  /** Runs `run` (one transaction) after every write before it and before any after it. */
  alone<T>(run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => this.enqueue({ kind: "alone", run, resolve: resolve as (v: unknown) => void, reject }));
  }

  private enqueue(unit: Batched<I, O> | Alone): void {
    this.pending.push(unit);
    if (this.scheduled) return;
    this.scheduled = true;
    // A turn of the event loop first, so the requests that arrived together share the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Starts what may start now: a batch while fewer than BATCHES_IN_FLIGHT run, a transaction once nothing runs. */
  private pump(): void {
    while (this.pending.length > 0 && !this.aloneRunning) {
      const head = this.pending[0]!;
      if (head.kind === "alone") {
        if (this.batchesInFlight > 0) return; // started again when the last batch answers
        this.pending.shift();
        this.aloneRunning = true;
        void withRetries(head.run).then(head.resolve, head.reject).finally(() => {
          this.aloneRunning = false;
          this.pump();
        });
        return;
      }
      if (this.batchesInFlight >= BATCHES_IN_FLIGHT) return;
      const end = this.pending.findIndex((u) => u.kind === "alone");
      const batch = this.pending.splice(0, Math.min(end === -1 ? this.pending.length : end, MAX_BATCH)) as Batched<I, O>[];
      this.batchesInFlight++;
      void this.store(batch).finally(() => {
        this.batchesInFlight--;
        this.pump();
      });
    }
  }

  private async store(batch: Batched<I, O>[]): Promise<void> {
    try {
      const results = await withRetries(() => this.runBatch(batch.map((u) => u.input)));
      batch.forEach((u, i) => (results[i] instanceof Error ? u.reject(results[i]) : u.resolve(results[i] as O)));
    } catch (e) {
      for (const u of batch) u.reject(e);
    }
  }
}

async function withRetries<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      if (attempt >= RETRIES || !isRetryable(e)) throw storeError(e);
    }
  }
}
