/**
 * Runs the store's checkpoints (checkpoints.ts) on a thread of their own, for the server: on the API thread,
 * which also commits the publishes, each checkpoint's copy stopped every request for its length.
 * The gauges /metrics reads (gauges.ts) are read here too: counting the pending deliveries grows with the
 * backlog (docs/metrics.md), and on the API thread it would stop every request for that long at each scrape.
 *
 *   main → thread   start   the database file to checkpoint and how to open it.
 *                   gauges  read the store's gauges at `now`; answered by `gauges` with the same id.
 *                   stop    stop the timer, close the connection, answer `stopped`.
 *   thread → main   failed  checkpoints fail with this cause (the timer goes on): for the server's log, once.
 *                   recovered  a checkpoint worked again after failing with this cause.
 *                   unable  the thread could not open its connection.
 *                   gauges  the figures, or the error that kept them from being read.
 *                   stopped closed; the thread may be terminated.
 *
 * If the thread cannot run (it could not open the file, or it ended), the checkpoints fall back to the store's
 * own connection on the calling thread, as for CLI commands and tests, so the WAL stays bounded whatever happens.
 */
import type { Database } from "bun:sqlite";
import { startCheckpoints, type CheckpointReport } from "./checkpoints.ts";
import type { Durability } from "./db.ts";
import { threadEntry } from "../../lib/thread-entry.ts";
import type { LockSignal } from "./lock-signal.ts";
import type { StoreGauges } from "../index.ts";

export type ToCheckpointer =
  | { type: "start"; path: string; durability: Durability; temporary: boolean; lockSignal: SharedArrayBuffer }
  | { type: "gauges"; id: number; now: number }
  | { type: "stop" };
export type FromCheckpointer = { type: "failed"; cause: string; error: string } | { type: "recovered"; cause: string }
  | { type: "unable"; error: string } | { type: "stopped" }
  | { type: "gauges"; id: number; gauges?: StoreGauges; error?: string };

/** How long `stop` waits for the thread to close its connection before ending it. */
const STOP_WAIT_MS = 2_000;

export type CheckpointThread = {
  stop(): Promise<void>;
  /** The store's gauges, read on the thread; rejects once the thread is gone (the caller reads them itself). */
  gauges(now: number): Promise<StoreGauges>;
  /** For tests: the thread itself. */
  thread: Worker;
};

const checkpointEntry = () => threadEntry(import.meta.url, "store/sqlite/checkpointer.ts", "store/sqlite/checkpoint-thread.ts");

/**
 * Starts the thread for the database at `path`; `sqlite` is the caller's own connection to it, used only if the
 * thread cannot run. `lockSignal` is told when a checkpoint gives back the write lock (lock-signal.ts). `report`
 * gets checkpoint failures and recoveries, `problem` the fallback, as a log line.
 */
export function startCheckpointThread(sqlite: Database, path: string, durability: Durability, temporary: boolean,
  lockSignal: LockSignal, report: CheckpointReport, problem: (msg: string, error: unknown) => void): CheckpointThread {
  // smol: the small JavaScriptCore heap; this thread holds a timer and a connection, nothing more.
  const thread = new Worker(checkpointEntry(), { smol: true });
  let stopping = false;
  let fallback: (() => void) | undefined;
  let stopped: (() => void) | undefined;
  let asked = 0;
  const waiting = new Map<number, { resolve(g: StoreGauges): void; reject(e: Error): void }>();
  const gone = () => {
    for (const w of waiting.values()) w.reject(new Error("the checkpoint thread is gone"));
    waiting.clear();
  };
  const fallBack = (why: string, error: unknown) => {
    gone();
    if (stopping || fallback) return;
    problem(`${why}; checkpointing on the main thread instead`, error);
    fallback = startCheckpoints(sqlite, path, report);
    thread.terminate();
  };
  thread.addEventListener("message", (event: MessageEvent<FromCheckpointer>) => {
    const m = event.data;
    if (m.type === "failed") report.failed(m.cause, m.error);
    else if (m.type === "recovered") report.recovered(m.cause);
    else if (m.type === "unable") fallBack("the checkpoint thread could not open the database", m.error);
    else if (m.type === "stopped") stopped?.();
    else if (m.type === "gauges") {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.gauges) w?.resolve(m.gauges);
      else w?.reject(new Error(m.error ?? "reading the gauges failed"));
    }
  });
  thread.addEventListener("error", (event: ErrorEvent) => fallBack("the checkpoint thread failed", event.message));
  thread.addEventListener("close", () => fallBack("the checkpoint thread ended", null));
  // The server is kept alive by its listener; this thread must not keep a finished process alive.
  thread.unref();
  thread.postMessage({ type: "start", path, durability, temporary, lockSignal: lockSignal.buffer } satisfies ToCheckpointer);
  return {
    thread,
    gauges(now) {
      if (stopping || fallback) return Promise.reject(new Error("the checkpoint thread is gone"));
      const id = ++asked;
      return new Promise<StoreGauges>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        thread.postMessage({ type: "gauges", id, now } satisfies ToCheckpointer);
      });
    },
    async stop() {
      stopping = true;
      gone();
      if (fallback) return fallback(); // the thread is gone already
      let timer: Timer | undefined;
      await new Promise<void>((resolve) => {
        stopped = resolve;
        timer = setTimeout(resolve, STOP_WAIT_MS);
        thread.postMessage({ type: "stop" } satisfies ToCheckpointer);
      });
      clearTimeout(timer);
      thread.terminate();
    },
  };
}
