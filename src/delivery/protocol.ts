// The protocol between the main thread (supervisor.ts) and the delivery worker thread (worker.ts):
//
//   main → worker   start   once, first: where the database is, the configuration, and the owner name that
//                           prefixes this worker's lease tokens; `releaseOwners` lists earlier workers of this
//                           process that died, whose leases can be given back at once instead of expiring;
//                           `lockSignal`, shared memory the worker bumps each time it gives back the write lock;
//                           `postgres`: the database is PostgreSQL at `url` (then `dbPath` is unused), and
//                           `instance` names this process on the wake channel.
//                   nudge   a publish committed: look for due deliveries now (polling is the safety net).
//                   stop    finish sends in flight within `drainMs`, give back the rest, close, answer `stopped`.
//   worker → main   log     a line for the main thread's logger (the worker has none of its own).
//                   metrics what the worker counted since its last batch (metrics/deliveries.ts), at most once a
//                           second and only when it counted something; the last one just before `stopped`.
//                   stopped the worker has released its leases and closed its database; it may be terminated.
//                   fatal   the worker hit an error it cannot continue from; it exits, the supervisor restarts it.
//                   storage the database refused the worker's writes for `cause` (it pauses), or, `recovered`,
//                           a write committed again (it resumes); once each per outage (store/outage.ts).
//
// Messages are plain objects of primitives (and the configuration), which Bun's postMessage clones cheaply;
// the lock signal's SharedArrayBuffer is shared, not copied.
import type { Config } from "../config.ts";
import type { Fields } from "../lib/log.ts";
import type { DeliveryBatch } from "../metrics/deliveries.ts";

export type StartMessage = {
  type: "start";
  dbPath: string;
  config: Config;
  version: string;
  owner: string;
  releaseOwners: string[];
  lockSignal?: SharedArrayBuffer;
  postgres?: { url: string; instance: string };
};
export type ToWorker = StartMessage | { type: "nudge" } | { type: "stop"; drainMs: number };

export type LogLevel = "info" | "warn" | "error";
export type FromWorker =
  | { type: "log"; level: LogLevel; msg: string; fields?: Fields }
  | { type: "metrics"; batch: DeliveryBatch }
  | { type: "stopped" }
  | { type: "fatal"; error: string }
  | { type: "storage"; cause: string; error?: string; recovered?: true };
