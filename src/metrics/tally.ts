/**
 * Accumulators for the hot paths (every request, every delivery attempt): plain numbers in maps and typed
 * arrays, no allocation per observation. prom-client reads them only when /metrics is scraped (registry.ts).
 * prom-client's own labelled Histogram validates and hashes the labels on every observation, an order of
 * magnitude more (docs/performance.md); its exposition is still what /metrics serves (histogram.ts).
 */

/** Upper bounds in seconds. A request is served in well under a millisecond to a few seconds. */
export const REQUEST_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** A receiver's answer, up to the longest delivery timeout anyone should set. */
export const DELIVERY_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60];
/** Publish to acknowledgement: milliseconds when all is well, the retry schedule's delays (up to hours) when not. */
export const PUBLISH_TO_ACK_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000, 86400];

/** A histogram's counts as plain data: per bucket (not cumulative, the last one past every bound), sum, count. */
export type BucketsData = { counts: number[]; sum: number; count: number };

export class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  /** Adds counts taken with the same bounds (a batch from the delivery worker). */
  add(data: BucketsData): void {
    const n = Math.min(data.counts.length, this.counts.length);
    for (let i = 0; i < n; i++) this.counts[i]! += data.counts[i]!;
    this.sum += data.sum;
    this.count += data.count;
  }

  data(): BucketsData {
    return { counts: Array.from(this.counts), sum: this.sum, count: this.count };
  }
}

export function bump<K>(counts: Map<K, number>, key: K, by = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + by);
}

/** The Buckets of `key`, made on first use. */
export function bucketsOf<K>(all: Map<K, Buckets>, key: K, bounds: readonly number[]): Buckets {
  let b = all.get(key);
  if (!b) all.set(key, (b = new Buckets(bounds)));
  return b;
}
