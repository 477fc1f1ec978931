/**
 * Every metric of GET /metrics (docs/metrics.md lists them), in one prom-client Registry. Nothing here runs on a
 * request or a delivery: the hot paths count into the tallies (tally.ts, requests.ts, deliveries.ts), and a
 * scrape reads them, reads the store's gauges once (Store.gauges), and lets prom-client write the text.
 *
 * The `org` label is the organization's name, looked up from its id at scrape time (cached; a rename shows
 * within a minute). Every organization gets every series from its first scrape on, zeros included, so a
 * rate() or an alert sees a series before its first event. Labels are organization names and fixed sets
 * only, never a queue, listener or message id: the number of series grows with organizations, not with use.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { LivenessState, Store, StoreGauges } from "../store/index.ts";
import { BucketsHistogram, type Series } from "./histogram.ts";
import { DeliveryTally, OUTCOMES } from "./deliveries.ts";
import { RequestTally } from "./requests.ts";
import { bump, type Buckets } from "./tally.ts";

const LIVENESS_STATES: readonly LivenessState[] = ["pending", "stable", "unstable", "down"];
/**
 * prom-client's default metrics kept: the process figures, the event loop's lag and the heap's size. Left out
 * under Bun: the V8 heap spaces (JavaScriptCore has none, and reading them slowed every scrape), the
 * Node version (not the runtime that runs) and the active handles (gauges named like counters).
 */
const KEPT_DEFAULTS = /^(process_|nodejs_eventloop_lag_|nodejs_heap_size_|nodejs_external_memory_)/;
const NAMES_MAX_AGE_MS = 60_000;

/** Organization ids to names, read from the store when an unknown id shows up or the names are a minute old. */
class OrgNames {
  private names = new Map<string, string>();
  private readAt = -Infinity;

  constructor(private readonly store: Store) {}

  async refresh(ids: Iterable<string>, now: number): Promise<void> {
    const unknown = [...ids].some((id) => !this.names.has(id));
    if (!unknown && now - this.readAt <= NAMES_MAX_AGE_MS) return;
    this.names = new Map((await this.store.orgs.list()).map((o) => [o.id, o.name]));
    this.readAt = now;
  }

  ids(): string[] {
    return [...this.names.keys()];
  }

  /** The label of an id: its name (an id the store does not know keeps its id). */
  label(id: string): string {
    return this.names.get(id) ?? id;
  }
}

export class Metrics {
  readonly requests = new RequestTally();
  readonly deliveries = new DeliveryTally();
  private readonly publishedCounts = new Map<string, number>();
  private workerRestarts = 0;
  private readonly registry = new Registry();
  private readonly orgs: OrgNames;
  /** The store's figures of the scrape in progress, and its time; the collect functions read them. */
  private gauges: StoreGauges = { deliveries: [], listeners: [], oldestDueAt: null, databaseBytes: 0 };
  private now = 0;

  constructor(private readonly store: Store, private readonly clock: { now(): number }, version: string) {
    this.orgs = new OrgNames(store);
    new Gauge({ name: "fanout_info", help: "The running fanout's version (always 1).", labelNames: ["version"], registers: [this.registry],
      collect() { this.set({ version }, 1); } });
    this.defineRequests();
    this.defineDeliveries();
    this.defineStoreGauges();
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults });
    for (const metric of defaults.getMetricsAsArray()) if (KEPT_DEFAULTS.test(metric.name)) this.registry.registerMetric(metric as never);
  }

  /** A publish committed (hot path: one map update). */
  published(orgId: string): void {
    bump(this.publishedCounts, orgId);
  }

  workerRestarted(): void {
    this.workerRestarts++;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text of one scrape. */
  async render(): Promise<string> {
    this.now = this.clock.now();
    this.gauges = await this.store.gauges(this.now);
    await this.orgs.refresh([...this.publishedCounts.keys(), ...this.deliveries.attempts.keys(), ...this.gauges.listeners.map((l) => l.orgId)], this.now);
    return this.registry.metrics();
  }

  private histogram(name: string, help: string, series: () => Iterable<Series>): void {
    this.registry.registerMetric(new BucketsHistogram(name, help, series) as never);
  }

  /** A counter per organization, from a count by organization id. */
  private orgCounter(name: string, help: string, count: (orgId: string) => number): void {
    const orgs = this.orgs;
    new Counter({ name, help, labelNames: ["org"], registers: [this.registry], collect() {
      this.reset();
      for (const id of orgs.ids()) this.inc({ org: orgs.label(id) }, count(id));
    } });
  }

  private defineRequests(): void {
    const requests = this.requests;
    new Counter({ name: "fanout_http_requests_total", help: "HTTP requests answered, by method, route pattern and status.",
      labelNames: ["method", "route", "status"], registers: [this.registry], collect() {
        this.reset();
        for (const { labels, value } of requests.counts()) this.inc(labels, value);
      } });
    this.histogram("fanout_http_request_duration_seconds", "Time from a request's arrival to its response, by method and route pattern.",
      () => requests.durations());
  }

  private defineDeliveries(): void {
    const { deliveries, orgs } = this;
    const byOrg = (all: Map<string, Buckets>) => function* (): Iterable<Series> {
      for (const [id, buckets] of all) yield { labels: { org: orgs.label(id) }, buckets };
    };
    this.orgCounter("fanout_messages_published_total", "Messages published (committed).", (id) => this.publishedCounts.get(id) ?? 0);
    new Counter({ name: "fanout_delivery_attempts_total", labelNames: ["org", "outcome"], registers: [this.registry],
      help: "Delivery attempts by outcome: acknowledged (2xx in time), failed (another answer, or a broken connection), timeout, refused (no connection, or a target the SSRF guard refused).",
      collect() {
        this.reset();
        for (const id of orgs.ids()) for (const outcome of OUTCOMES) this.inc({ org: orgs.label(id), outcome }, deliveries.attempts.get(id)?.get(outcome) ?? 0);
      } });
    this.histogram("fanout_delivery_duration_seconds", "A receiver's answer time per delivery attempt (to the answer, the error or the timeout).",
      byOrg(deliveries.durations));
    this.histogram("fanout_publish_to_acknowledged_seconds",
      "From a message's publish to the answer that acknowledged it, per acknowledged delivery (retries included).", byOrg(deliveries.toAcknowledged));
    this.orgCounter("fanout_messages_missed_total", "Deliveries that became missed (retries spent, or held longer than the retry schedule).",
      (id) => deliveries.missedCounts.get(id) ?? 0);
    const self = this;
    new Counter({ name: "fanout_worker_restarts_total", help: "Times the delivery worker thread died and was started again.",
      registers: [this.registry], collect() {
        this.reset();
        this.inc(self.workerRestarts);
      } });
  }

  private defineStoreGauges(): void {
    const self = this;
    const registers = [this.registry];
    const perOrg = (pick: (d: StoreGauges["deliveries"][number]) => number) => function (this: Gauge<"org">) {
      this.reset();
      const byOrg = new Map(self.gauges.deliveries.map((d) => [d.orgId, pick(d)]));
      for (const id of self.orgs.ids()) this.set({ org: self.orgs.label(id) }, byOrg.get(id) ?? 0);
    };
    new Gauge({ name: "fanout_deliveries_pending", help: "Deliveries waiting to be sent: due now, or a retry scheduled.",
      labelNames: ["org"], registers, collect: perOrg((d) => d.pending) });
    new Gauge({ name: "fanout_deliveries_held", help: "Deliveries held for a listener that is down (sent once it is back).",
      labelNames: ["org"], registers, collect: perOrg((d) => d.held) });
    new Gauge({ name: "fanout_listeners", help: "Listeners by liveness state.", labelNames: ["org", "state"], registers, collect() {
      this.reset();
      const counts = new Map(self.gauges.listeners.map((l) => [`${l.orgId} ${l.state}`, l.count]));
      for (const id of self.orgs.ids()) for (const state of LIVENESS_STATES) this.set({ org: self.orgs.label(id), state }, counts.get(`${id} ${state}`) ?? 0);
    } });
    new Gauge({ name: "fanout_delivery_lag_seconds", registers,
      help: "How long the delivery that has waited longest past its due time has waited (0 when none waits).", collect() {
        const at = self.gauges.oldestDueAt;
        this.set(at === null ? 0 : Math.max(0, self.now - at) / 1000);
      } });
    new Gauge({ name: "fanout_database_bytes", help: "Size of the database on disk, its write-ahead log included.", registers,
      collect() { this.set(self.gauges.databaseBytes); } });
  }
}
