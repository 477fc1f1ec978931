// BucketsHistogram must expose exactly what prom-client's own Histogram exposes for the same observations: the
// registry formats both, so the same values give the same text, byte for byte.
import { expect, test } from "bun:test";
import { Histogram, Registry } from "prom-client";
import { BucketsHistogram } from "./histogram.ts";
import { Buckets, REQUEST_SECONDS } from "./tally.ts";

test("the exposition equals prom-client's Histogram for the same observations, labels, bounds and edges", async () => {
  const observations: [string, number][] = [["/a", 0.0001], ["/a", 0.0005], ["/a", 0.0006], ["/b \"q\"\\", 3], ["/a", 11], ["/b \"q\"\\", 0.01]];
  const reference = new Registry();
  const theirs = new Histogram({ name: "h_seconds", help: "help \\ text", labelNames: ["route"], buckets: REQUEST_SECONDS, registers: [reference] });
  const ours = new Registry();
  const series = new Map<string, Buckets>();
  ours.registerMetric(new BucketsHistogram("h_seconds", "help \\ text", () => [...series].map(([route, buckets]) => ({ labels: { route }, buckets }))) as any);
  for (const [route, v] of observations) {
    theirs.observe({ route }, v);
    if (!series.has(route)) series.set(route, new Buckets(REQUEST_SECONDS));
    series.get(route)!.observe(v);
  }
  const text = await ours.metrics();
  expect(text).toBe(await reference.metrics());
  expect(text).toContain('h_seconds_bucket{le="0.0005",route="/a"} 2'); // a value on a bound counts in that bucket
  expect(text).toContain('h_seconds_bucket{le="+Inf",route="/a"} 4');
});

test("counts added from a batch are the same as counts observed here", () => {
  const worker = new Buckets(REQUEST_SECONDS);
  const main = new Buckets(REQUEST_SECONDS);
  const direct = new Buckets(REQUEST_SECONDS);
  for (const v of [0.001, 0.2, 7, 99]) (worker.observe(v), direct.observe(v));
  main.add(worker.data());
  main.add(worker.data());
  for (const v of [0.001, 0.2, 7, 99]) direct.observe(v);
  expect(main.data()).toEqual(direct.data());
});
