/**
 * Fan-out: for 1, 10 and 100 listeners (each its own receiver port, answering 204), publish N messages as fast
 * as h2load can and measure deliveries per second at the receivers between the 10th and 90th percentile
 * arrival (the sustained part, without ramp-up and tail). Then publish at half that rate (in messages: the
 * sustained delivery rate / listeners / 2) and measure the delay from the client receiving the 200 to the
 * receiver getting the delivery. Baseline: bare fetch from Bun to the same receivers with the same caps.
 * A worker that delivers nothing ends each wait after the stall bound and is reported "not delivered".
 */
import { join } from "node:path";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { runBaselineFanout } from "../baselines.ts";
import { makeQueue, startFanout, BENCH_KEY, type FanoutServer } from "../fanout-server.ts";
import { runH2load } from "../loadgen.ts";
import { delays, publishPaced } from "../publisher.ts";
import { figure } from "../report.ts";
import { wallMs } from "../payload.ts";
import { percentile } from "../stats.ts";
import type { Arrivals } from "../receiver-client.ts";

const NOT_DELIVERED = "not delivered: no delivery reached the receivers before the stall bound";

type Case = { listeners: number; messages: number };
/** endToEnd: all deliveries over the time from the first publish to the last arrival, ingest included. */
type Throughput = { arrivals: Arrivals; publishSeconds: number; publishFailures: number; endToEnd: number | null };
type Latency = { p50: number | null; p99: number | null; rate: number; samples: number; expected: number; failures: number };

async function throughput(ctx: Ctx, server: FanoutServer, queueId: string, c: Case): Promise<Throughput> {
  await ctx.receivers.reset();
  const done = meterCpu(ctx, `fanout ${c.listeners} listener(s)`, server.pid);
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const t0 = performance.now();
  const startedAt = wallMs();
  const pub = await runH2load(target, { clients: ctx.plan.h2Clients, streams: ctx.plan.h2Streams, count: c.messages });
  const publishSeconds = (performance.now() - t0) / 1000;
  const arrivals = await ctx.receivers.waitFor(c.messages * c.listeners, ctx.plan.stallMs);
  done(pub.clientCpu);
  const endToEnd = arrivals.last === null ? null : arrivals.count / ((arrivals.last - startedAt) / 1000);
  return { arrivals, publishSeconds, publishFailures: pub.failures, endToEnd };
}

async function latency(ctx: Ctx, server: FanoutServer, queueId: string, c: Case, sustained: number): Promise<Latency> {
  await ctx.receivers.reset();
  await ctx.receivers.track(true);
  const rate = Math.max(1, sustained / c.listeners / 2);
  const url = `${server.url}/v1/queues/${queueId}/messages`;
  const paced = await publishPaced(url, BENCH_KEY, ctx.body, rate, ctx.plan.latencySeconds);
  const expected = paced.accepted.size * c.listeners;
  await ctx.receivers.waitFor(expected, ctx.plan.stallMs);
  const ms = delays(paced.accepted, await ctx.receivers.tracked());
  await ctx.receivers.track(false);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), rate, samples: ms.length, expected, failures: paced.failures };
}

async function baseline(ctx: Ctx, c: Case) {
  await ctx.receivers.reset();
  const urls = Array.from({ length: c.listeners }, (_, i) => ctx.receivers.url(i));
  const done = meterCpu(ctx, `bare fetch ${c.listeners} listener(s)`, undefined);
  const run = await runBaselineFanout(urls, c.messages, ctx.plan.globalConcurrency, ctx.plan.listenerConcurrency, 120_000);
  const arrivals = await ctx.receivers.waitFor(c.messages * c.listeners, ctx.plan.stallMs);
  done(run.cpu);
  return { arrivals, run };
}

/** The publish rate beside the delivery rate: with one listener, deliveries cannot outrun publishing. */
function describe(a: Arrivals, tp: Throughput, c: Case): string {
  const published = `${c.messages} messages published in ${tp.publishSeconds.toFixed(1)} s (${Math.round(c.messages / tp.publishSeconds)}/s)`;
  if (a.count === 0) return `${NOT_DELIVERED}; ${published}`;
  if (!a.complete) return `partial: ${a.count} of ${a.expected} deliveries arrived before the stall bound; ${published}`;
  return published;
}

/** `section` and `prefix` name the figures of another section that measures a case the same way (postgres.ts). */
type Labels = { section: string; prefix: string };

function addFigures(ctx: Ctx, c: Case, tp: Throughput, base: Awaited<ReturnType<typeof baseline>>, lat: Latency | null, sustained: number,
  { section, prefix }: Labels): void {
  const a = tp.arrivals;
  const name = `${prefix}fan-out ${c.listeners} listener${c.listeners > 1 ? "s" : ""}`;
  const target = c.listeners === 10 ? { kind: "ratio>=" as const, value: 0.5 } : undefined;
  ctx.figures.push(figure({ section, name, unit: "deliveries/s", value: a.count > 0 ? a.rate : null, baseline: base.arrivals.rate,
    baselineName: `bare fetch, ${Math.min(ctx.plan.globalConcurrency, ctx.plan.listenerConcurrency * c.listeners)} in flight`, target, note: describe(a, tp, c) }));
  const latNote = lat ? `publishing ${lat.rate.toFixed(0)} msg/s (half of ${Math.round(sustained)} deliveries/s end to end); ${lat.samples} of ${lat.expected} deliveries timed`
    : a.count > 0 ? "no sustained rate" : NOT_DELIVERED;
  for (const p of ["p50", "p99"] as const) {
    ctx.figures.push(figure({ section, name: `${name} publish→received ${p}`, unit: "ms", value: lat?.[p] ?? null, baseline: null,
      baselineName: "(absolute target)", target: p === "p99" ? { kind: "<", value: 50 } : undefined, note: p === "p99" ? latNote : undefined }));
  }
}

export async function runCase(ctx: Ctx, server: FanoutServer, queueId: string, c: Case, labels: Labels = { section: "fanout", prefix: "" }) {
  const base = await baseline(ctx, c);
  const tp = await throughput(ctx, server, queueId, c);
  const a = tp.arrivals;
  if (!a.complete) log(`fan-out ${c.listeners}: fanout's output ends with:\n${server.child.output().slice(-1500)}`);
  log(`fan-out ${c.listeners}: ${a.count}/${a.expected} delivered, ${Math.round(a.rate ?? 0)}/s; bare fetch ${Math.round(base.arrivals.rate ?? 0)}/s`);
  // The pace is half of what the system sustains with publishing and delivering at once: when publishing ends
  // early (one listener, small runs), the 10–90 % delivery rate alone is a drain rate and overstates it.
  const sustained = Math.min(a.rate ?? 0, tp.endToEnd ?? 0);
  const lat = a.count > 0 && sustained > 0 ? await latency(ctx, server, queueId, c, sustained) : null;
  if (lat) log(`fan-out ${c.listeners}: at ${lat.rate.toFixed(0)} msg/s, delay p50 ${lat.p50?.toFixed(2)} ms, p99 ${lat.p99?.toFixed(2)} ms (${lat.samples}/${lat.expected})`);
  addFigures(ctx, c, tp, base, lat, sustained, labels);
  return { case: c, fanout: { ...tp, latency: lat }, bareFetch: base };
}

/** A fresh server and database per case, so deliveries left over from one case cannot arrive in the next. */
export async function fanoutSection(ctx: Ctx): Promise<void> {
  const results = [];
  for (const c of ctx.plan.fanout) {
    const server = await startFanout({ binary: ctx.plan.binary, db: join(ctx.dir, `fanout-${c.listeners}`, "fanout.db"), ttlMs: ctx.plan.deadlineMs });
    try {
      const urls = Array.from({ length: c.listeners }, (_, i) => ctx.receivers.url(i));
      const { queueId } = await makeQueue(server, `fanout-${c.listeners}`, urls);
      results.push(await runCase(ctx, server, queueId, c));
    } finally {
      const { peakKb } = await server.stop();
      notePeak(ctx, `fanout ${c.listeners} listener(s)`, peakKb);
    }
  }
  ctx.details.fanout = results;
}
