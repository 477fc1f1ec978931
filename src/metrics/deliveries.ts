/**
 * Delivery counts by organization id: attempts by outcome, the receiver's answer time, publish to
 * acknowledgement, missed messages. The delivery worker counts into one DeliveryTally and hands what it
 * counted to the main thread as one batch at most every second (`take`, then postMessage), never a message
 * per delivery; the main thread adds the batches into its own DeliveryTally, which /metrics reads. A worker
 * that dies loses at most its last second of counts, never the totals.
 */
import { Buckets, bucketsOf, bump, DELIVERY_SECONDS, PUBLISH_TO_ACK_SECONDS, type BucketsData } from "./tally.ts";

/**
 * acknowledged: a 2xx in time. failed: another answer, or a connection that broke after it was made.
 * timeout: no answer within the delivery timeout. refused: no connection (refused, unreachable, or a target
 * the SSRF guard refused).
 */
export type DeliveryOutcome = "acknowledged" | "failed" | "timeout" | "refused";
export const OUTCOMES: readonly DeliveryOutcome[] = ["acknowledged", "failed", "timeout", "refused"];

export type DeliveryBatch = {
  attempts: [orgId: string, outcome: DeliveryOutcome, count: number][];
  durations: [orgId: string, data: BucketsData][];
  toAcknowledged: [orgId: string, data: BucketsData][];
  missed: [orgId: string, count: number][];
};

export class DeliveryTally {
  readonly attempts = new Map<string, Map<DeliveryOutcome, number>>();
  readonly durations = new Map<string, Buckets>();
  readonly toAcknowledged = new Map<string, Buckets>();
  readonly missedCounts = new Map<string, number>();
  private touched = false;

  /** One attempt: its outcome, the receiver's answer time, and for an acknowledgement the time since the publish. */
  attempted(orgId: string, outcome: DeliveryOutcome, seconds: number, sincePublishSeconds?: number): void {
    let byOutcome = this.attempts.get(orgId);
    if (!byOutcome) this.attempts.set(orgId, (byOutcome = new Map()));
    bump(byOutcome, outcome);
    bucketsOf(this.durations, orgId, DELIVERY_SECONDS).observe(seconds);
    if (sincePublishSeconds !== undefined) bucketsOf(this.toAcknowledged, orgId, PUBLISH_TO_ACK_SECONDS).observe(sincePublishSeconds);
    this.touched = true;
  }

  missed(orgId: string, count = 1): void {
    bump(this.missedCounts, orgId, count);
    this.touched = true;
  }

  /** Everything counted since the last take, as plain data for postMessage; null when nothing was. */
  take(): DeliveryBatch | null {
    if (!this.touched) return null;
    const batch: DeliveryBatch = {
      attempts: [...this.attempts].flatMap(([org, byOutcome]) => [...byOutcome].map(([o, n]) => [org, o, n] as [string, DeliveryOutcome, number])),
      durations: [...this.durations].map(([org, b]) => [org, b.data()]),
      toAcknowledged: [...this.toAcknowledged].map(([org, b]) => [org, b.data()]),
      missed: [...this.missedCounts],
    };
    this.attempts.clear();
    this.durations.clear();
    this.toAcknowledged.clear();
    this.missedCounts.clear();
    this.touched = false;
    return batch;
  }

  add(batch: DeliveryBatch): void {
    for (const [org, outcome, n] of batch.attempts) {
      let byOutcome = this.attempts.get(org);
      if (!byOutcome) this.attempts.set(org, (byOutcome = new Map()));
      bump(byOutcome, outcome, n);
    }
    for (const [org, data] of batch.durations) bucketsOf(this.durations, org, DELIVERY_SECONDS).add(data);
    for (const [org, data] of batch.toAcknowledged) bucketsOf(this.toAcknowledged, org, PUBLISH_TO_ACK_SECONDS).add(data);
    for (const [org, n] of batch.missed) bump(this.missedCounts, org, n);
  }
}
