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
const IDLE_PER_REQUEST = 4;
/** How often the worker hands its counts to the main thread (a scrape sees deliveries at most this late). */
const METRICS_EVERY_MS = 1_000;

const post = (message: FromWorker) => self.postMessage(message);
const log = (level: LogLevel, msg: string, fields?: Fields) => post({ type: "log", level, msg, fields });
const logger: Logger = { info: (m, f) => log("info", m, f), warn: (m, f) => log("warn", m, f), error: (m, f) => log("error", m, f) };

/** Everything one started worker holds, made by the `start` message, so nothing lives at module level. */
class WorkerRuntime {
  private sqlite: Database | undefined;
  private postgres: WorkerStore | undefined;
  private loop: DeliveryLoop | undefined;
  private upkeep: Upkeep | undefined;
  private outage: Outage | undefined;
  private metricsTimer: Timer | undefined;
  private failed = false;
  private readonly pool: SocketPool;
  private readonly events = new LogEvents(logger);
  private readonly tally = new DeliveryTally();

  constructor(private readonly m: StartMessage) {
    const { config } = m;
    // Idle connections in all: IDLE_PER_REQUEST times the requests the worker may have in flight. Many listeners
    // each between bursts keep more idle sockets than one round of requests; a bound of one round closed and
    // reopened them (docs/performance.md, Idle connections). With the defaults, about 1,400 sockets at most.
    const maxIdle = IDLE_PER_REQUEST * config.deliveryConcurrency + PROBE_CONCURRENCY;
    this.pool = new SocketPool({ maxIdlePerKey: config.listenerConcurrency, maxIdle });
  }

  async start(): Promise<void> {
    const { m } = this;
    const { config } = m;
    const store = this.openStore();
    const request = { policy: makeTargetPolicy(config.allowTargets), pool: this.pool };
    const now = systemClock.now;
    const trouble = (error: unknown) => this.trouble(error);
    this.outage = new Outage({
      probe: () => store.checkWritable(now()),
      report: {
        failed: (cause, error) => post({ type: "storage", cause, error: String(error) }),
        recovered: (cause) => post({ type: "storage", cause, recovered: true }),
      },
      onRecovered: () => this.loop?.resume(),
    });
    const paused = () => this.outage?.down ?? false;
    for (const owner of m.releaseOwners) {
      // Not written (the database cannot be): the dead worker's leases expire, and the loop takes the rows back then.
      const released = await store.releaseOwner(owner, now()).catch((e: unknown) => (trouble(e), 0));
      if (released > 0) log("info", "gave back the deliveries of a dead delivery worker", { count: released });
    }
    const { events } = this;
    const lead = this.postgres?.lead;
    const prober = new Prober({
      store, send, now, intervalMs: config.livenessIntervalMs, concurrency: PROBE_CONCURRENCY, userAgent: `fanout/${m.version}`, request, events,
      fail: trouble, paused,
    });
    const loop = new DeliveryLoop({
      store,
      owner: m.owner,
      now,
      deliveryTimeoutMs: config.deliveryTimeoutMs,
      retryScheduleMs: config.retryScheduleMs,
      globalCap: config.deliveryConcurrency,
      listenerCap: config.listenerConcurrency,
      attempt: { send, now, version: m.version, scheduleMs: config.retryScheduleMs, request: { ...request, timeoutMs: config.deliveryTimeoutMs } },
      prober,
      lead,
      fail: trouble,
      paused,
      observer: this.observer(),
    });
    this.loop = loop;
    this.upkeep = new Upkeep({ store, now, retentionMs: config.retentionMs, wake: () => loop.wake(), events, lead, fail: trouble, paused });
    loop.start();
    this.metricsTimer = setInterval(() => this.postMetrics(), METRICS_EVERY_MS);
    this.upkeep.start();
    // Another instance's publish wakes this loop; after each (re-)subscription it looks once, for what it missed.
    await this.postgres?.listen(() => loop.nudge(), () => loop.wake());
  }

  nudge(): void {
    this.loop?.nudge();
  }

  async stop(drainMs: number): Promise<void> {
    const inFlight = this.loop?.active ?? 0;
    await Promise.all([this.loop?.stop(drainMs), this.upkeep?.stop()]);
    this.outage?.stop();
    clearInterval(this.metricsTimer);
    this.postMetrics();
    if (inFlight > 0) log("info", "delivery worker drained", { in_flight_at_stop: inFlight, abandoned: this.loop?.active ?? 0 });
    this.pool.destroy();
    this.sqlite?.close();
    this.sqlite = undefined;
    await this.postgres?.close();
    this.postgres = undefined;
    post({ type: "stopped" });
  }

  /**
   * Reports, closes what it can, and exits this thread (not the process); the supervisor starts another after a
   * growing delay.
   */
  fatal(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    let text = errorText(error);
    try {
      this.sqlite?.close();
    } catch (e) {
      text += ` (closing the database failed too: ${(e as Error).message})`;
    }
    void this.postgres?.close(); // the process ends its connections anyway
    post({ type: "fatal", error: text });
    process.exit(1);
  }

  /** A storage error pauses the worker; any other error ends it. */
  private trouble(error: unknown): void {
    if (!this.outage?.absorb(error)) this.fatal(error);
  }

  private openStore(): DeliveryStore {
    const { m } = this;
    if (m.postgres) {
      this.postgres = openWorkerStore(m.postgres.url, m.postgres.instance);
      return this.postgres.store;
    }
    // Checkpoints nothing (db.ts): the server's checkpoint thread keeps the WAL bounded (store/sqlite/checkpointer.ts).
    this.sqlite = openDatabase(m.dbPath, m.config.durability);
    return deliveryStore(this.sqlite, m.lockSignal && new LockSignal(m.lockSignal));
  }

  private postMetrics(): void {
    const batch = this.tally.take();
    if (batch) post({ type: "metrics", batch });
  }

  /** Counts every attempt and missed delivery, and logs the missed ones (log-events.ts bounds how many lines). */
  private observer(): LoopObserver {
    const { tally, events } = this;
    return {
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
  }
}

const errorText = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Before `start` there is nothing to close: report and exit. */
function fatalBeforeStart(error: unknown): void {
  post({ type: "fatal", error: errorText(error) });
  process.exit(1);
}

let runtime: WorkerRuntime | undefined;
const fatal = (error: unknown) => (runtime ? runtime.fatal(error) : fatalBeforeStart(error));

// Installed before anything awaits: messages that arrive while no handler exists are dropped.
self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === "start") {
    if (runtime) return; // the protocol starts a worker once
    runtime = new WorkerRuntime(m);
    runtime.start().catch(fatal);
  } else if (m.type === "nudge") runtime?.nudge();
  else if (m.type === "stop") (runtime ? runtime.stop(m.drainMs) : Promise.resolve(post({ type: "stopped" }))).catch(fatal);
};
process.on("uncaughtException", fatal);
process.on("unhandledRejection", fatal);
