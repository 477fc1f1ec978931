// Entry point of the delivery worker thread (protocol: protocol.ts). It opens its own connection to the
// database the main thread has already migrated, runs the drain loop and the liveness prober, and reports
// through postMessage only. A build must list this file as a second entry point (scripts/build.ts).
import type { Database } from "bun:sqlite";
import { openDatabase } from "../store/sqlite/db.ts";
import { LockSignal } from "../store/sqlite/lock-signal.ts";
import { deliveryStore } from "../store/sqlite/deliveries.ts";
import { makeTargetPolicy, send } from "./egress.ts";
import { SocketPool } from "./http1/client.ts";
import { DeliveryLoop } from "./loop.ts";
import { Prober } from "./liveness.ts";
import { Upkeep } from "./upkeep.ts";
import { systemClock } from "../lib/clock.ts";
import type { Fields } from "../lib/log.ts";
import type { FromWorker, LogLevel, StartMessage, ToWorker } from "./protocol.ts";

declare var self: Worker;

const PROBE_CONCURRENCY = 64;
let sqlite: Database | undefined;
let loop: DeliveryLoop | undefined;
let upkeep: Upkeep | undefined;
let pool: SocketPool | undefined;
let failed = false;

const post = (message: FromWorker) => self.postMessage(message);
const log = (level: LogLevel, msg: string, fields?: Fields) => post({ type: "log", level, msg, fields });

/** Reports, closes what it can, and exits this thread (not the process); the supervisor starts a new worker. */
function fail(error: unknown): void {
  if (failed) return;
  failed = true;
  let text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  try {
    sqlite?.close();
  } catch (e) {
    text += ` (closing the database failed too: ${(e as Error).message})`;
  }
  post({ type: "fatal", error: text });
  process.exit(1);
}

async function start(m: StartMessage): Promise<void> {
  const { config } = m;
  // Checkpoints nothing (db.ts): the server's checkpoint thread keeps the WAL bounded (store/sqlite/checkpointer.ts).
  sqlite = openDatabase(m.dbPath, config.durability);
  const store = deliveryStore(sqlite, m.lockSignal && new LockSignal(m.lockSignal));
  pool = new SocketPool(config.listenerConcurrency);
  const request = { policy: makeTargetPolicy(config.allowTargets), pool };
  const now = systemClock.now;
  for (const owner of m.releaseOwners) {
    const released = await store.releaseOwner(owner, now());
    if (released > 0) log("info", "gave back the deliveries of a dead delivery worker", { count: released });
  }
  const userAgent = `fanout/${m.version}`;
  const prober = new Prober({
    store, send, now, intervalMs: config.livenessIntervalMs, concurrency: PROBE_CONCURRENCY, userAgent, request, log, fail,
  });
  loop = new DeliveryLoop({
    store,
    owner: m.owner,
    now,
    deliveryTimeoutMs: config.deliveryTimeoutMs,
    retryScheduleMs: config.retryScheduleMs,
    globalCap: config.deliveryConcurrency,
    listenerCap: config.listenerConcurrency,
    attempt: { send, now, version: m.version, scheduleMs: config.retryScheduleMs, request: { ...request, timeoutMs: config.deliveryTimeoutMs } },
    prober,
    fail,
    log,
  });
  const delivering = loop;
  upkeep = new Upkeep({ store, now, retentionMs: config.retentionMs, wake: () => delivering.wake(), log, fail });
  loop.start();
  upkeep.start();
}

async function stop(drainMs: number): Promise<void> {
  const inFlight = loop?.active ?? 0;
  await Promise.all([loop?.stop(drainMs), upkeep?.stop()]);
  if (inFlight > 0) log("info", "delivery worker drained", { in_flight_at_stop: inFlight, abandoned: loop?.active ?? 0 });
  pool?.destroy();
  sqlite?.close();
  sqlite = undefined;
  post({ type: "stopped" });
}

// Installed before anything awaits: messages that arrive while no handler exists are dropped.
self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === "start") start(m).catch(fail);
  else if (m.type === "nudge") loop?.nudge();
  else if (m.type === "stop") stop(m.drainMs).catch(fail);
};
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
