/**
 * One writer's view of a storage outage (disk full, read-only file system: docs/operations.md). The first
 * StorageUnavailable of a cause is reported, later ones of the same cause are not; then a real write (`probe`)
 * is tried every `everyMs` until one commits, and the recovery of every cause seen is reported.
 *
 * Only the probe ends an outage, never an ordinary write that happened to succeed: a write that changed nothing
 * (a sweep that found nothing to delete, a claim that found nothing due) commits on a full disk too, and would
 * report a recovery that is not one, then the error again. The API thread's store and the delivery worker each
 * keep one (sources "writes" and "delivery"); lib/log-events.ts joins their lines into one per cause.
 */
import { StorageUnavailable } from "../lib/errors.ts";

export type OutageReport = {
  failed(cause: string, error: unknown): void;
  recovered(cause: string): void;
};

export type OutageOptions = {
  /** One small real write (Store.checkWritable, DeliveryStore.checkWritable). */
  probe: () => Promise<void>;
  report: OutageReport;
  /** Runs after the recovery is reported: work held back meanwhile may start again. */
  onRecovered?: () => void;
  everyMs?: number;
};

export const PROBE_EVERY_MS = 1_000;

export class Outage {
  private readonly causes = new Set<string>();
  private timer: Timer | undefined;
  private stopped = false;

  constructor(private readonly o: OutageOptions) {}

  /** True from a storage error until a probe commits: work that only writes may wait meanwhile. */
  get down(): boolean {
    return this.causes.size > 0;
  }

  /** Takes `error` if it is a storage error (and returns true); any other error is the caller's. */
  absorb(error: unknown): error is StorageUnavailable {
    if (!(error instanceof StorageUnavailable)) return false;
    if (!this.causes.has(error.reason)) {
      this.causes.add(error.reason);
      this.o.report.failed(error.reason, error.underlying ?? error.message);
    }
    this.schedule();
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => void this.check(), this.o.everyMs ?? PROBE_EVERY_MS);
    // A process that is done (a CLI command, a test) does not stay alive for a probe.
    this.timer.unref();
  }

  private async check(): Promise<void> {
    try {
      await this.o.probe();
    } catch (error) {
      this.timer = undefined;
      // Another kind of failure (the lock stayed busy) proves nothing either way: the next probe tells.
      if (!this.absorb(error)) this.schedule();
      return;
    }
    this.timer = undefined;
    const causes = [...this.causes];
    this.causes.clear();
    for (const cause of causes) this.o.report.recovered(cause);
    if (causes.length > 0 && !this.stopped) this.o.onRecovered?.();
  }
}
