/**
 * The lines the service logs about its own life and its listeners (docs/metrics.md, Logs), one method each, so every
 * caller writes the same message with the same field names and a new caller finds the line it needs here.
 * Ids go in fields named for what they identify: `listener`, `queue`, `message`. No method takes a secret.
 *
 * Volume is bounded by design: liveness is logged on a change of state only (at most one line per listener
 * per probe interval, however it flaps), a storage error once per cause until it clears, and missed messages
 * in bulk (a listener down for the whole retry schedule misses its backlog at once) as one line per listener.
 */
import type { Fields, Logger } from "./log.ts";

export type LivenessChange = {
  listener: string;
  queue: string;
  from: string;
  to: string;
  /** Why the probe failed (a status or a connection error), for a change to unstable or down. */
  reason?: string;
  /** Held deliveries made due again, for a change out of down. */
  resumed?: number;
};

export type Missed = { listener: string; queue: string; message: string; reason: string };

/** A listener that missed more than this many messages at once gets one line with the count instead of one each. */
export const MISSED_LINES_PER_LISTENER = 10;

export class LogEvents {
  /** Each failing cause, with the sources still failing with it. */
  private readonly failing = new Map<string, Set<string>>();

  constructor(readonly log: Logger) {}

  /** The start line: the address, and the settings that matter (config.ts `loggableSettings`: no secret). */
  started(url: string, settings: Fields): void {
    this.log.info(`listening on ${url}`, settings);
  }

  stopping(signal: string): void {
    this.log.info("shutting down", { signal });
  }

  stopped(): void {
    this.log.info("stopped");
  }

  livenessChanged(c: LivenessChange): void {
    const fields = { listener: c.listener, queue: c.queue, from: c.from, to: c.to, reason: c.reason, resumed: c.resumed };
    if (c.to === "down") this.log.warn("listener down; its deliveries wait", fields);
    else if (c.from === "down") this.log.info("listener back up; its deliveries resume", fields);
    else if (c.to === "unstable") this.log.warn("listener unstable: a liveness probe failed", fields);
    else this.log.info(`listener ${c.to}`, fields);
  }

  /** A receiver answered 410 Gone: its listener is disabled and its deliveries are held until it is enabled. */
  listenerDisabled(d: { listener: string; queue: string; message?: string; status: number }): void {
    this.log.warn("listener disabled: its receiver answered 410 Gone; its deliveries are held", d);
  }

  /** Deliveries that became missed together (retries spent, or held for longer than the retry schedule). */
  messagesMissed(list: Missed[]): void {
    const byListener = new Map<string, Missed[]>();
    for (const m of list) byListener.set(m.listener, [...(byListener.get(m.listener) ?? []), m]);
    for (const group of byListener.values()) {
      if (group.length <= MISSED_LINES_PER_LISTENER) {
        for (const m of group) this.log.warn("message missed", { listener: m.listener, queue: m.queue, message: m.message, reason: m.reason });
        continue;
      }
      const first = group[0]!;
      this.log.warn("messages missed", { listener: first.listener, queue: first.queue, count: group.length,
        first_message: first.message, last_message: group[group.length - 1]!.message, reason: first.reason });
    }
  }

  workerRestarted(r: { worker: string; code: number; restartInMs: number }): void {
    this.log.error("delivery worker exited; restarting it", { worker: r.worker, code: r.code, restart_in_ms: r.restartInMs });
  }

  /** One line per retention sweep that deleted something; a sweep that found nothing is not news. */
  retentionSwept(counts: { messages: number; deliveries?: number; attempts?: number }): void {
    if (counts.messages + (counts.deliveries ?? 0) + (counts.attempts ?? 0) === 0) return;
    this.log.info("retention sweep deleted old messages", counts);
  }

  /**
   * The storage cannot do what was asked (disk full, read-only file system, a failed checkpoint). Several parts
   * notice one cause (`source`: the API thread's writes, the delivery worker, the checkpoints): the first to report
   * it writes the line, and `storageRecovered` writes one when the last of them recovers. So a failing disk writes
   * one line however many requests and threads fail on it, and one when it is writable again.
   */
  storageError(cause: string, error: unknown, source = "store"): void {
    const sources = this.failing.get(cause);
    if (sources) {
      sources.add(source);
      return;
    }
    this.failing.set(cause, new Set([source]));
    this.log.error(`storage error: ${cause}`, { error: errorText(error), source });
  }

  storageRecovered(cause: string, source = "store"): void {
    const sources = this.failing.get(cause);
    if (!sources?.delete(source) || sources.size > 0) return;
    this.failing.delete(cause);
    this.log.info(`storage recovered: ${cause}`);
  }
}

function errorText(error: unknown): string | undefined {
  if (error === null || error === undefined) return undefined;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
