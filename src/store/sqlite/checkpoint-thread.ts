/**
 * The checkpoint thread's entry (checkpointer.ts starts it): its own connection to the database file and the
 * checkpoint timer (checkpoints.ts) on it, so a checkpoint's copy blocks this thread instead of the API thread.
 * Messages are described in checkpointer.ts; a failed checkpoint (once per cause) and its recovery are reported
 * there for the server's log.
 */
import type { Database } from "bun:sqlite";
import { openDatabase } from "./db.ts";
import { startCheckpoints } from "./checkpoints.ts";
import { LockSignal } from "./lock-signal.ts";
import { storeGauges } from "./gauges.ts";
import type { FromCheckpointer, ToCheckpointer } from "./checkpointer.ts";

declare const self: Worker;
let db: Database | undefined;
let stopTimer: (() => void) | undefined;
let gauges: ReturnType<typeof storeGauges> | undefined;

const post = (message: FromCheckpointer) => self.postMessage(message);

self.onmessage = (event: MessageEvent<ToCheckpointer>) => {
  const m = event.data;
  if (m.type === "start") {
    try {
      db = openDatabase(m.path, m.durability, m.temporary);
      const report = {
        failed: (cause: string, error: unknown) => post({ type: "failed", cause, error: String(error) }),
        recovered: (cause: string) => post({ type: "recovered", cause }),
      };
      stopTimer = startCheckpoints(db, m.path, report, { keepAlive: true, signal: new LockSignal(m.lockSignal) });
      gauges = storeGauges(db, m.path);
    } catch (error) {
      post({ type: "unable", error: String(error) });
    }
  } else if (m.type === "gauges") {
    const { id } = m;
    if (!gauges) return post({ type: "gauges", id, error: "no connection" });
    gauges(m.now).then((g) => post({ type: "gauges", id, gauges: g }), (e) => post({ type: "gauges", id, error: String(e) }));
  } else if (m.type === "stop") {
    stopTimer?.();
    db?.close();
    post({ type: "stopped" });
  }
};
