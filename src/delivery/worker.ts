// Entry point of the delivery worker thread (protocol: protocol.ts). It opens its own connection to the
// database the main thread has already migrated (a SQLite file, or PostgreSQL), runs the drain loop and the
// liveness prober, and reports through postMessage only. A build must list this file as a second entry point
// (scripts/build.ts).
import type { Database } from "bun:sqlite";
import { openDatabase } from "../store/sqlite/db.ts";
import { LockSignal } from "../store/sqlite/lock-signal.ts";
import { deliveryStore } from "../store/sqlite/deliveries.ts";
import { openWorkerStore, type WorkerStore } from "../store/postgres/worker-store.ts";
import type { DeliveryStore } from "../store/deliveries.ts";
import { AppError } from "../lib/errors.ts";
import { makeTargetPolicy, send } from "./egress.ts";
import { SocketPool } from "./http1/client.ts";
import { DeliveryLoop } from "./loop.ts";
import { Prober } from "./liveness.ts";
import { systemClock } from "../lib/clock.ts";
import type { Fields } from "../lib/log.ts";
import type { FromWorker, LogLevel, StartMessage, ToWorker } from "./protocol.ts";

declare var self: Worker;

const PROBE_CONCURRENCY = 64;
/** At most one line per this long while the database stays unreachable. */
const UNAVAILABLE_LOG_MS = 30_000;
let sqlite: Database | undefined;
let postgres: WorkerStore | undefined;
let loop: DeliveryLoop | undefined;
let pool: SocketPool | undefined;
let failed = false;
let unavailableLoggedAt = -Infinity;

const post = (message: FromWorker) => self.postMessage(message);
const log = (level: LogLevel, msg: string, fields?: Fields) => post({ type: "log", level, msg, fields });

/**
 * Reports, closes what it can, and exits this thread (not the process); the supervisor starts a new worker. A
 * database that is unreachable for now (503 from the PostgreSQL store) is waited out instead: the loop's poll
 * tries again, results not yet written stay in memory, and leases keep others off the rows meanwhile.
 */
function fail(error: unknown): void {
  if (!(error instanceof AppError && error.status === 503) || failed) return fatal(error);
  if (performance.now() - unavailableLoggedAt < UNAVAILABLE_LOG_MS) return;
  unavailableLoggedAt = performance.now();
  log("warn", "the database is unavailable; deliveries wait for it", { error: error.message });
}

/** A worker that cannot start (or go on) ends; the supervisor starts another after a growing delay. */
function fatal(error: unknown): void {
  if (failed) return;
  failed = true;
  let text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  try {
    sqlite?.close();
  } catch (e) {
    text += ` (closing the database failed too: ${(e as Error).message})`;
  }
  void postgres?.close(); // the process ends its connections anyway
  post({ type: "fatal", error: text });
  process.exit(1);
}

function openStore(m: StartMessage): DeliveryStore {
  if (m.postgres) {
    postgres = openWorkerStore(m.postgres.url, m.postgres.instance);
    return postgres.store;
  }
  // Checkpoints nothing (db.ts): the server's checkpoint thread keeps the WAL bounded (store/sqlite/checkpointer.ts).
  sqlite = openDatabase(m.dbPath, m.config.durability);
  return deliveryStore(sqlite, m.lockSignal && new LockSignal(m.lockSignal));
}

async function start(m: StartMessage): Promise<void> {
  const { config } = m;
  const store = openStore(m);
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
    lead: postgres?.lead,
    fail,
  });
  loop.start();
  // Another instance's publish wakes this loop; after each (re-)subscription it looks once, for what it missed.
  await postgres?.listen(() => loop?.nudge(), () => loop?.wake());
}

async function stop(drainMs: number): Promise<void> {
  const inFlight = loop?.active ?? 0;
  await loop?.stop(drainMs);
  if (inFlight > 0) log("info", "delivery worker drained", { in_flight_at_stop: inFlight, abandoned: loop?.active ?? 0 });
  pool?.destroy();
  sqlite?.close();
  sqlite = undefined;
  await postgres?.close();
  postgres = undefined;
  post({ type: "stopped" });
}

// Installed before anything awaits: messages that arrive while no handler exists are dropped.
self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === "start") start(m).catch(fatal);
  else if (m.type === "nudge") loop?.nudge();
  else if (m.type === "stop") stop(m.drainMs).catch(fatal);
};
process.on("uncaughtException", fatal);
process.on("unhandledRejection", fatal);
