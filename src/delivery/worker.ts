// Entry point of the delivery worker thread (protocol: protocol.ts). It opens its own connection to the
// database the main thread has already migrated (a SQLite file, or PostgreSQL), runs the drain loop and the
// liveness prober, and reports through postMessage only. A build must list this file as a second entry point
// (scripts/build.ts).
// When the database cannot be written (or, on PostgreSQL, reached), the worker pauses instead of ending
// (store/outage.ts): the loop, the prober and the upkeep start no write, a probe write is tried every second, and
// the first that commits resumes them; results not yet written stay in memory meanwhile, and leases keep other
// instances off the rows. The outage and its end go to the main thread as `storage` messages, for its one log
// line per cause.
import type { Database } from "bun:sqlite";
import { openDatabase } from "../store/sqlite/db.ts";
import { LockSignal } from "../store/sqlite/lock-signal.ts";
import { deliveryStore } from "../store/sqlite/deliveries.ts";
import { openWorkerStore, type WorkerStore } from "../store/postgres/worker-store.ts";
import type { DeliveryStore } from "../store/deliveries.ts";
import { makeTargetPolicy, send } from "./egress.ts";
import { SocketPool } from "./http1/client.ts";
import { DeliveryLoop, type LoopObserver } from "./loop.ts";
import { Prober } from "./liveness.ts";
import { Upkeep } from "./upkeep.ts";
import { systemClock } from "../lib/clock.ts";
import type { Fields, Logger } from "../lib/log.ts";
import { LogEvents } from "../lib/log-events.ts";
import { DeliveryTally } from "../metrics/deliveries.ts";
import { Outage } from "../store/outage.ts";
import type { FromWorker, LogLevel, StartMessage, ToWorker } from "./protocol.ts";

declare var self: Worker;

const PROBE_CONCURRENCY = 64;
/** How often the worker hands its counts to the main thread (a scrape sees deliveries at most this late). */
const METRICS_EVERY_MS = 1_000;
let sqlite: Database | undefined;
let postgres: WorkerStore | undefined;
let loop: DeliveryLoop | undefined;
let upkeep: Upkeep | undefined;
let pool: SocketPool | undefined;
let failed = false;
let metricsTimer: Timer | undefined;
let outage: Outage | undefined;

const post = (message: FromWorker) => self.postMessage(message);
const log = (level: LogLevel, msg: string, fields?: Fields) => post({ type: "log", level, msg, fields });
const logger: Logger = { info: (m, f) => log("info", m, f), warn: (m, f) => log("warn", m, f), error: (m, f) => log("error", m, f) };
const events = new LogEvents(logger);
const tally = new DeliveryTally();

function postMetrics(): void {
  const batch = tally.take();
  if (batch) post({ type: "metrics", batch });
}

/** Counts every attempt and missed delivery, and logs the missed ones (log-events.ts bounds how many lines). */
const observer: LoopObserver = {
  attempted(c, result, endedAt) {
    const sincePublish = result.outcome === "acknowledged" ? Math.max(0, endedAt - c.message.createdAt) / 1000 : undefined;
    tally.attempted(c.listener.orgId, result.outcome, result.record.durationMs / 1000, sincePublish);
  },
  missed(deliveries, reason) {
    for (const d of deliveries) tally.missed(d.orgId);
    events.messagesMissed(deliveries.map((d) => ({ listener: d.listenerId, queue: d.queueId, message: d.messageId, reason })));
  },
  paused(d, status) {
    events.listenerDisabled({ listener: d.listenerId, queue: d.queueId, message: d.messageId, status });
  },
};

/** A storage error pauses the worker; any other error ends it. */
function trouble(error: unknown): void {
  if (!outage?.absorb(error)) fatal(error);
}

/**
 * Reports, closes what it can, and exits this thread (not the process); the supervisor starts another after a
 * growing delay.
 */
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
  // Idle connections in all: as many as the worker can have in flight, so its sockets stay within twice that.
  pool = new SocketPool({ maxIdlePerKey: config.listenerConcurrency, maxIdle: config.deliveryConcurrency + PROBE_CONCURRENCY });
  const request = { policy: makeTargetPolicy(config.allowTargets), pool };
  const now = systemClock.now;
  outage = new Outage({
    probe: () => store.checkWritable(now()),
    report: {
      failed: (cause, error) => post({ type: "storage", cause, error: String(error) }),
      recovered: (cause) => post({ type: "storage", cause, recovered: true }),
    },
    onRecovered: () => loop?.resume(),
  });
  const paused = () => outage?.down ?? false;
  for (const owner of m.releaseOwners) {
    // Not written (the database cannot be): the dead worker's leases expire, and the loop takes the rows back then.
    const released = await store.releaseOwner(owner, now()).catch((e: unknown) => (trouble(e), 0));
    if (released > 0) log("info", "gave back the deliveries of a dead delivery worker", { count: released });
  }
  const userAgent = `fanout/${m.version}`;
  const prober = new Prober({
    store, send, now, intervalMs: config.livenessIntervalMs, concurrency: PROBE_CONCURRENCY, userAgent, request, events, fail: trouble, paused,
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
    fail: trouble,
    paused,
    observer,
  });
  const delivering = loop;
  upkeep = new Upkeep({
    store, now, retentionMs: config.retentionMs, wake: () => delivering.wake(), events, lead: postgres?.lead, fail: trouble, paused,
  });
  loop.start();
  metricsTimer = setInterval(postMetrics, METRICS_EVERY_MS);
  upkeep.start();
  // Another instance's publish wakes this loop; after each (re-)subscription it looks once, for what it missed.
  await postgres?.listen(() => loop?.nudge(), () => loop?.wake());
}

async function stop(drainMs: number): Promise<void> {
  const inFlight = loop?.active ?? 0;
  await Promise.all([loop?.stop(drainMs), upkeep?.stop()]);
  outage?.stop();
  clearInterval(metricsTimer);
  postMetrics();
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
