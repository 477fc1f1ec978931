/**
 * Filtered fan-out: a queue of 100 listeners whose filters each take a tenth of the messages (the message's
 * `data.bucket` is 0-9, listener i takes bucket i mod 10) beside a queue of 10 listeners without filters, so
 * both make 10 deliveries a message. One server, both queues, the same publishing: wrk over HTTPS HTTP/1.1 (64
 * connections, a Lua script that gives each request the next bucket), for the run's seconds, then until every
 * delivery arrived. Rounds alternate the two queues. Reported: the filtered queue's ingest (2xx a second while
 * publishing) and its sustained delivery rate (arrivals between the 10th and 90th percentile), each as a ratio
 * of the unfiltered queue's in the same round; the median round. Targets: ingest ≥ 0.8, deliveries ≥ 0.9.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { makeQueue, startFanout, BENCH_KEY, type FanoutServer } from "../fanout-server.ts";
import { runWrk, type Load, type Target } from "../loadgen.ts";
import { figure } from "../report.ts";
import { messageBody } from "../payload.ts";
import type { Arrivals } from "../receiver-client.ts";

const BUCKETS = 10;
type Arm = "filtered" | "unfiltered";
type Run = { load: Load; arrivals: Arrivals; published: number };
type Round = { filtered: Run; unfiltered: Run };

/** wrk's Lua: the bench's 1 KiB order with `data.bucket` counting 0-9 per thread, so every bucket gets its share. */
function bucketScript(dir: string, key: string): string {
  const body = JSON.parse(messageBody());
  const [head, tail] = JSON.stringify({ name: body.name, data: { ...body.data, bucket: 0 } }).split('"bucket":0');
  const lua = (s: string) => JSON.stringify(s);
  const path = join(dir, "bucket.lua");
  writeFileSync(path, [
    `wrk.method = "POST"`,
    `wrk.headers["Content-Type"] = "application/json"`,
    `wrk.headers["X-API-KEY"] = ${lua(key)}`,
    `local n = 0`,
    `request = function()`,
    `  n = n + 1`,
    `  return wrk.format(nil, nil, nil, ${lua(head!)} .. '"bucket":' .. (n % ${BUCKETS}) .. ${lua(tail!)})`,
    `end`,
  ].join("\n"));
  return path;
}

async function queues(ctx: Ctx, server: FanoutServer) {
  const unfiltered = await makeQueue(server, "unfiltered", Array.from({ length: BUCKETS }, (_, i) => ctx.receivers.url(i)));
  const { queue } = await server.api("POST", "/queues", { name: "filtered" });
  for (let i = 0; i < 10 * BUCKETS; i++) {
    const notify = ctx.receivers.url(i);
    await server.api("POST", `/queues/${queue.id}/listeners`, {
      name: `f${i}`, notify_url: notify, liveness_url: new URL("/health", notify).href, filter: { data: { bucket: i % BUCKETS } },
    });
  }
  return { unfiltered: unfiltered.queueId, filtered: queue.id as string };
}

async function measure(ctx: Ctx, server: FanoutServer, arm: Arm, queueId: string, script: string, meter: boolean): Promise<Run> {
  await ctx.receivers.reset();
  const target: Target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const done = meter ? meterCpu(ctx, `filters: ${arm}`, server.pid) : () => undefined;
  const load = await runWrk(target, script, ctx.plan.wrkConnections, ctx.plan.pairSeconds);
  const published = load.requests - load.failures;
  const arrivals = await ctx.receivers.waitFor(published * BUCKETS, ctx.plan.stallMs);
  done(load.clientCpu);
  log(`filters ${arm}: ${Math.round(load.okPerSec)} msg/s published, ${arrivals.count}/${arrivals.expected} delivered, ${Math.round(arrivals.rate ?? 0)}/s`);
  const { raw, ...rest } = load;
  return { load: rest as Load, arrivals, published };
}

const ratioOf = (r: Round, pick: (run: Run) => number | null) => {
  const [f, u] = [pick(r.filtered), pick(r.unfiltered)];
  return f === null || u === null || u === 0 ? 0 : f / u;
};

export async function filtersSection(ctx: Ctx): Promise<void> {
  const server = await startFanout({ binary: ctx.plan.binary, db: join(ctx.dir, "filters", "fanout.db"), ttlMs: ctx.plan.deadlineMs });
  const rounds: Round[] = [];
  try {
    const ids = await queues(ctx, server);
    const script = bucketScript(ctx.dir, BENCH_KEY);
    // A warm-up of each arm, unmeasured: the JIT, TLS sessions, the page cache.
    for (const arm of ["unfiltered", "filtered"] as Arm[]) await measure(ctx, server, arm, ids[arm], script, false);
    for (let round = 0; round < ctx.plan.ingestRounds; round++) {
      const order: Arm[] = round % 2 === 0 ? ["unfiltered", "filtered"] : ["filtered", "unfiltered"];
      const runs: Partial<Round> = {};
      for (const arm of order) runs[arm] = await measure(ctx, server, arm, ids[arm], script, round === 0);
      rounds.push(runs as Round);
    }
  } finally {
    const { peakKb } = await server.stop();
    notePeak(ctx, "filters", peakKb);
  }
  const figures = [
    { name: "ingest, 100 filtered listeners (a tenth each)", unit: "msg/s" as const, pick: (r: Run) => r.load.okPerSec, target: 0.8 },
    { name: "deliveries, 100 filtered listeners (a tenth each)", unit: "deliveries/s" as const, pick: (r: Run) => r.arrivals.rate, target: 0.9 },
  ];
  for (const f of figures) {
    const sorted = [...rounds].sort((a, b) => ratioOf(a, f.pick) - ratioOf(b, f.pick));
    const m = sorted[Math.floor(sorted.length / 2)]!;
    const incomplete = rounds.filter((r) => !r.filtered.arrivals.complete || !r.unfiltered.arrivals.complete).length;
    const note = [`rounds: ${sorted.map((r) => ratioOf(r, f.pick).toFixed(2)).join(", ")}; the median round is shown`,
      incomplete ? `${incomplete} round(s) did not deliver everything` : undefined].filter(Boolean).join("; ");
    ctx.figures.push(figure({ section: "filters", name: f.name, unit: f.unit, value: f.pick(m.filtered), baseline: f.pick(m.unfiltered),
      baselineName: "10 unfiltered listeners, same server and round", target: { kind: "ratio>=", value: f.target }, note }));
  }
  ctx.details.filters = rounds;
}
