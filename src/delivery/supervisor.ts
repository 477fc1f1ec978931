// The main thread's side of the delivery worker (protocol: protocol.ts). It starts the worker, forwards nudges
// (coalesced: a burst of publishes makes one message), routes the worker's log lines to the main logger, and
// restarts a worker that dies, with a growing delay so a worker that cannot start does not spin. The next
// worker first gives back the dead one's leases, so its deliveries do not wait for the leases to expire.
import type { Config } from "../config.ts";
import type { Logger } from "../lib/log.ts";
import { LogEvents } from "../lib/log-events.ts";
import type { DeliveryBatch } from "../metrics/deliveries.ts";
import { randomBase62 } from "../lib/ids.ts";
import { threadEntry } from "../lib/thread-entry.ts";
import type { FromWorker, ToWorker } from "./protocol.ts";

export type DeliveryOptions = {
  dbPath: string;
  config: Config;
  log: Logger;
  version: string;
  /** The store's signal of a released write lock (store/sqlite/lock-signal.ts), for the worker to give. */
  lockSignal?: SharedArrayBuffer;
  /** The database is PostgreSQL: the worker connects to `url`, and ignores wake-ups sent by `instance` (its own). */
  postgres?: { url: string; instance: string };
  /** Tests only: another worker script speaking the same protocol. */
  workerUrl?: string;
  /** Gets the worker's counts (metrics/deliveries.ts) and each restart, for /metrics. */
  observer?: { batch(batch: DeliveryBatch): void; restarted(): void };
  /** The server's log events, shared with the store so a storage error is one line whoever meets it; else one on `log`. */
  events?: LogEvents;
};
export type DeliveryHandle = { nudge(): void; stop(): Promise<void> };

const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 30_000;
/** A worker that ran this long before dying is restarted quickly again: its death was not a start-up loop. */
const HEALTHY_AFTER_MS = 60_000;

/** The delivery worker's entry file, from source or inside a compiled binary (lib/thread-entry.ts). */
export function workerEntry(moduleUrl = import.meta.url): string {
  return threadEntry(moduleUrl, "delivery/supervisor.ts", "delivery/worker.ts");
}

/** Part of the shutdown bound kept for writing results, giving back leases and closing after the drain. */
export function drainBudget(shutdownTimeoutMs: number): number {
  return Math.max(0, shutdownTimeoutMs - Math.min(2_000, Math.floor(shutdownTimeoutMs / 4)));
}

export function startDelivery(options: DeliveryOptions): DeliveryHandle {
  const supervisor = new Supervisor(options);
  supervisor.spawn();
  return { nudge: () => supervisor.nudge(), stop: () => supervisor.stop() };
}

class Supervisor {
  private worker: Worker | null = null;
  private owner = "";
  private startedAt = 0;
  private failures = 0;
  private stopping: Promise<void> | null = null;
  private restartTimer: Timer | undefined;
  private nudgeQueued = false;
  private settleStop: (() => void) | null = null;
  /** Owners of workers that died; the next worker gives back their leases. */
  private readonly deadOwners: string[] = [];
  private readonly events: LogEvents;
  /** Causes the current worker reported failing (its outage): forgotten if it dies, so they cannot stay failing. */
  private readonly storageCauses = new Set<string>();

  constructor(private readonly options: DeliveryOptions) {
    this.events = options.events ?? new LogEvents(options.log);
  }

  spawn(): void {
    const { options } = this;
    this.owner = `w${process.pid}-${randomBase62(8)}`;
    this.startedAt = Date.now();
    // The small JavaScriptCore heap: collected more often, a lower peak RSS at no measured cost
    // (docs/performance.md, Memory and start).
    const w = new Worker(options.workerUrl ?? workerEntry(), { smol: true });
    this.worker = w;
    w.addEventListener("message", (event: MessageEvent<FromWorker>) => this.onMessage(event.data));
    w.addEventListener("error", (event: ErrorEvent) => options.log.error("delivery worker error", { worker: this.owner, error: event.message }));
    w.addEventListener("close", (event: Event) => this.onClose(w, (event as CloseEvent).code));
    const releaseOwners = this.deadOwners.splice(0);
    this.post({ type: "start", dbPath: options.dbPath, config: options.config, version: options.version, owner: this.owner, releaseOwners,
      lockSignal: options.lockSignal, postgres: options.postgres });
  }

  /**
   * One message per turn of the event loop however many publishes committed in it. A microtask is not enough:
   * Bun drains microtasks after every request, which made one cross-thread message per publish.
   */
  nudge(): void {
    if (this.nudgeQueued || this.stopping || !this.worker) return;
    this.nudgeQueued = true;
    setImmediate(() => {
      this.nudgeQueued = false;
      this.post({ type: "nudge" });
    });
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopWorker();
    return this.stopping;
  }

  private post(message: ToWorker): void {
    this.worker?.postMessage(message);
  }

  private onMessage(message: FromWorker): void {
    const { log } = this.options;
    if (message.type === "log") log[message.level](message.msg, { ...message.fields, worker: this.owner });
    else if (message.type === "metrics") this.options.observer?.batch(message.batch);
    else if (message.type === "fatal") log.error("delivery worker failed", { worker: this.owner, error: message.error });
    else if (message.type === "stopped") this.settleStop?.();
    else if (message.type === "storage") this.storage(message.cause, message.recovered ? undefined : message.error ?? "");
  }

  /** The worker's outage, for the shared storage log line (log-events.ts); `error` undefined: recovered. */
  private storage(cause: string, error: string | undefined): void {
    if (error === undefined) {
      this.storageCauses.delete(cause);
      this.events.storageRecovered(cause, "delivery");
    } else {
      this.storageCauses.add(cause);
      this.events.storageError(cause, error, "delivery");
    }
  }

  private onClose(w: Worker, code: number): void {
    if (w !== this.worker) return;
    this.worker = null;
    this.deadOwners.push(this.owner);
    for (const cause of this.storageCauses) this.storage(cause, undefined);
    if (this.stopping) return this.settleStop?.();
    this.failures = Date.now() - this.startedAt > HEALTHY_AFTER_MS ? 1 : this.failures + 1;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (this.failures - 1));
    this.options.observer?.restarted();
    this.events.workerRestarted({ worker: this.owner, code, restartInMs: delay });
    this.restartTimer = setTimeout(() => this.spawn(), delay);
  }

  /** Bounded by the shutdown timeout: a worker that does not answer in time is terminated (its leases expire). */
  private async stopWorker(): Promise<void> {
    clearTimeout(this.restartTimer);
    const w = this.worker;
    if (!w) return;
    const { config, log } = this.options;
    let timer: Timer | undefined;
    await new Promise<void>((resolve) => {
      this.settleStop = resolve;
      timer = setTimeout(() => {
        log.warn("delivery worker did not stop in time; ending it", { worker: this.owner });
        resolve();
      }, config.shutdownTimeoutMs);
      this.post({ type: "stop", drainMs: drainBudget(config.shutdownTimeoutMs) });
    });
    clearTimeout(timer);
    w.terminate();
  }
}
