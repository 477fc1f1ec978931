// Entry point of the delivery worker thread (protocol: protocol.ts). It opens its own connection to the
// database the main thread has already migrated, runs the drain loop and the liveness prober, and reports
// through postMessage only. A build must list this file as a second entry point (scripts/build.ts).
import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { BUSY_TIMEOUT_MS, openDatabase } from "../store/sqlite/db.ts";
import { deliveryStore } from "../store/sqlite/deliveries.ts";
import { AgentPool, makeTargetPolicy, send } from "./egress.ts";
import { DeliveryLoop } from "./loop.ts";
import { Prober } from "./liveness.ts";
import { systemClock } from "../lib/clock.ts";
import type { Fields } from "../lib/log.ts";
import type { FromWorker, LogLevel, StartMessage, ToWorker } from "./protocol.ts";

declare var self: Worker;

const PROBE_CONCURRENCY = 64;
/**
 * The API thread's connection does not checkpoint (db.ts): a checkpoint's copy and fsync would stall requests.
 * This thread does it instead, in two steps:
 * - PASSIVE copies the WAL into the database file without the write lock, so publishes go on committing.
 *   Alone it is not enough: under constant ingest it never catches up with the writer, so the WAL never restarts
 *   and grows without bound (470 MB in 8 s, measured).
 * - TRUNCATE then takes the write lock, copies only what was committed during the first step, and cuts the
 *   file to zero, so the file's size measures what is left to copy. Alone it held the lock for the whole copy
 *   (~18 ms per 6 MB, measured), and the stalls cost a quarter of ingest throughput; in two steps the lock is
 *   held for the tail and the sync, and ingest rose 13 % (bench notes in the README).
 * TRUNCATE also waits for readers, so it gets a short busy timeout of its own: a long reader (a backup, a large
 * list) then leaves the checkpoint partial for this round (reported as a row, not an error) instead of stalling
 * every delivery for the connection's full 5 s.
 * A checkpoint starts when the WAL passes 4 MiB (SQLite's own threshold is 1000 pages), checked often, and at
 * least every 500 ms: a clock alone let a burst of publishes pile up 16k frames between two ticks, an 83 ms stall
 * of every delivery. After a partial (busy) round only the clock starts the next one, so a long reader does not
 * make this thread wait every tick.
 */
const CHECKPOINT_EVERY_MS = 500;
const CHECKPOINT_WAIT_MS = 100;
const WAL_CHECK_EVERY_MS = 50;
const CHECKPOINT_AT_BYTES = 4 * 1024 * 1024;

let sqlite: Database | undefined;
let loop: DeliveryLoop | undefined;
let agents: AgentPool | undefined;
let checkpoints: ReturnType<typeof setInterval> | undefined;
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
  sqlite = openDatabase(m.dbPath, config.durability);
  const store = deliveryStore(sqlite);
  agents = new AgentPool({ maxSockets: config.listenerConcurrency });
  const request = { policy: makeTargetPolicy(config.allowTargets), agents };
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
  });
  loop.start();
  let lastCheckpoint = 0;
  let lastWasPartial = false;
  checkpoints = setInterval(() => {
    const at = performance.now();
    const wal = walBytes(m.dbPath);
    // An empty WAL needs nothing, and even an empty checkpoint syncs the database file (~6 ms measured).
    const due = wal > 0 && (at - lastCheckpoint >= CHECKPOINT_EVERY_MS || (!lastWasPartial && wal >= CHECKPOINT_AT_BYTES));
    if (!due) return;
    lastCheckpoint = at;
    try {
      sqlite?.run("PRAGMA wal_checkpoint(PASSIVE)");
      sqlite?.run(`PRAGMA busy_timeout = ${CHECKPOINT_WAIT_MS}`);
      lastWasPartial = sqlite?.query<{ busy: number }, []>("PRAGMA wal_checkpoint(TRUNCATE)").get()?.busy === 1;
      sqlite?.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    } catch (e) {
      // A checkpoint that cannot run leaves the WAL unbounded: the supervisor restarts this thread.
      fail(e);
    }
  }, WAL_CHECK_EVERY_MS);
}

/** The WAL file's size; 0 when there is none yet. A stat is cheap beside a checkpoint. */
function walBytes(dbPath: string): number {
  try {
    return statSync(`${dbPath}-wal`).size;
  } catch {
    return 0; // no WAL file yet: nothing to checkpoint
  }
}

async function stop(drainMs: number): Promise<void> {
  const inFlight = loop?.active ?? 0;
  clearInterval(checkpoints);
  await loop?.stop(drainMs);
  if (inFlight > 0) log("info", "delivery worker drained", { in_flight_at_stop: inFlight, abandoned: loop?.active ?? 0 });
  agents?.destroy();
  sqlite?.close();
  sqlite = undefined;
  post({ type: "stopped" });
}

// Installed before anything awaits: messages that arrive while no handler exists are dropped.
self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === "start") start(m).catch(fail);
  else if (m.type === "nudge") loop?.wake();
  else if (m.type === "stop") stop(m.drainMs).catch(fail);
};
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
