/**
 * A histogram whose counts are kept in Buckets (tally.ts) and exposed through prom-client's Registry, which
 * formats every metric of /metrics. prom-client's Registry takes any metric object with `name`, `help`,
 * `type` and `get()` (its own metrics are such objects); the values here have exactly the shape its Histogram
 * produces (cumulative `_bucket` lines with `le` first, `+Inf`, `_sum`, `_count`), and histogram.test.ts checks
 * the text against prom-client's own Histogram fed the same observations.
 */
import type { Buckets } from "./tally.ts";

export type Labels = Record<string, string>;
export type Series = { labels: Labels; buckets: Buckets };

export class BucketsHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";

  /** `series` is read at each scrape: one labelled series per entry, all with the same bounds. */
  constructor(readonly name: string, readonly help: string, private readonly series: () => Iterable<Series>) {}

  /** What prom-client's metrics give its Registry: name, help, type, aggregator and the values to print. */
  async get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number; sharedLabels: Labels }[] = [];
    const line = (metricName: string, labels: Record<string, string | number>, value: number, shared: Labels) =>
      values.push({ metricName, labels, value, sharedLabels: shared });
    for (const { labels, buckets } of this.series()) {
      let cumulative = 0;
      buckets.bounds.forEach((le, i) => {
        cumulative += buckets.counts[i]!;
        line(`${this.name}_bucket`, { le }, cumulative, labels);
      });
      line(`${this.name}_bucket`, { le: "+Inf" }, buckets.count, labels);
      line(`${this.name}_sum`, {}, buckets.sum, labels);
      line(`${this.name}_count`, {}, buckets.count, labels);
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The registry's resetMetrics(); counts belong to their owners, so there is nothing to reset here. */
  reset(): void {}
}
