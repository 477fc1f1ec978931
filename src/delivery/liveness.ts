// Liveness (docs/delivery.md): every listener's liveness_url gets a GET each liveness interval, 5 s timeout. A 2xx
// is a success, anything else (a timeout, a refused target) a failure.
//
//   pending --success--> stable          any --success--> stable (failures in a row back to 0)
//   pending|stable|unstable --failure, 1st or 2nd in a row--> unstable
//   any --failure, 3rd or later in a row--> down
//
// While a listener is down its deliveries are held (store: hold) instead of sent, so an outage does not burn
// their retries; a success resumes them in the same transaction that records it.
import type { LivenessState } from "../store/index.ts";
import type { DeliveryStore, ProbeTarget } from "../store/deliveries.ts";
import type { SendRequest, SendResult } from "./egress.ts";
import type { LogEvents } from "../lib/log-events.ts";

export const PROBE_TIMEOUT_MS = 5_000;
export const DOWN_AFTER_FAILURES = 3;
const RESUME_CHUNK = 5_000;

export type Liveness = { state: LivenessState; failuresInRow: number };

export function nextLiveness(previous: Liveness, ok: boolean): Liveness {
  if (ok) return { state: "stable", failuresInRow: 0 };
  const failuresInRow = previous.failuresInRow + 1;
  return { state: failuresInRow >= DOWN_AFTER_FAILURES ? "down" : "unstable", failuresInRow };
}

export type ProberDeps = {
  store: DeliveryStore;
  send: (request: SendRequest) => Promise<SendResult>;
  now: () => number;
  intervalMs: number;
  /** Probes in flight at most, across listeners. */
  concurrency: number;
  userAgent: string;
  request: Pick<SendRequest, "policy" | "pool" | "resolve" | "insecureTls">;
  /** A line for each change of a listener's state (log-events.ts), never one per probe. */
  events: LogEvents;
  /** A probe's write failed (the store): the worker pauses on a storage error, ends on any other. */
  fail: (error: unknown) => void;
  /** True while the database cannot be written: no probe starts, since its outcome could not be recorded. */
  paused?: () => boolean;
};

/** Runs due probes; `tick` is called by the worker's timer. */
export class Prober {
  private inFlight = 0;
  private stopped = false;

  constructor(private readonly deps: ProberDeps) {}

  async tick(): Promise<void> {
    if (this.stopped || this.deps.paused?.()) return;
    const free = this.deps.concurrency - this.inFlight;
    if (free <= 0) return;
    const now = this.deps.now();
    // A claimed probe's next time is pushed past its timeout, so a slow probe is never started twice.
    const due = await this.deps.store.claimProbes(free, PROBE_TIMEOUT_MS + this.deps.intervalMs, now);
    for (const target of due) this.track(this.probe(target));
  }

  get active(): number {
    return this.inFlight;
  }

  /** Probes in flight are abandoned at shutdown (their results dropped): the listeners are probed again after a restart. */
  stop(): void {
    this.stopped = true;
  }

  /** In chunks, giving the event loop (and the main thread's writes) a turn between them. */
  private async resume(seq: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.deps.store.resume(seq, RESUME_CHUNK, this.deps.now());
      total += n;
      if (n < RESUME_CHUNK || this.stopped) return total;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private track(run: Promise<void>): void {
    this.inFlight++;
    void run.catch(this.deps.fail).finally(() => this.inFlight--);
  }

  private async probe(target: ProbeTarget): Promise<void> {
    const started = this.deps.now();
    const result = await this.deps.send({
      ...this.deps.request,
      url: target.livenessUrl,
      method: "GET",
      body: "",
      headers: { ...target.headers, "user-agent": this.deps.userAgent },
      timeoutMs: PROBE_TIMEOUT_MS,
      poolKey: `liveness:${target.seq}`,
    });
    if (this.stopped) return;
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const next = nextLiveness(target, ok);
    const nextProbeAt = started + this.deps.intervalMs;
    const changed = await this.deps.store.recordProbe({ seq: target.seq, previous: target.state, ok, ...next, nextProbeAt }, this.deps.now());
    // After every success, not only after `down`: a crash between recording and resuming is repaired by the next.
    const resumed = changed && ok ? await this.resume(target.seq) : 0;
    if (!changed || next.state === target.state) return;
    const reason = ok ? undefined : result.status === null ? result.error : `status ${result.status}`;
    this.deps.events.livenessChanged({ listener: target.id, queue: target.queueId, from: target.state, to: next.state, reason,
      resumed: target.state === "down" ? resumed : undefined });
  }
}
