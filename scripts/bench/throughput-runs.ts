/**
 * The runs of the throughput section, each on a fresh server and database of the binary given (so nothing left
 * over from one run is delivered in the next), over HTTP/1.1 without TLS, 1 KiB messages, to a queue of 1 or 10
 * listeners whose receivers answer 204:
 *   ingest      wrk, 64 connections, as fast as the server answers (after a warm-up): msg/s
 *   end to end  N publishes (h2load --h1, 64 connections, as fast as it can), timed from the first publish until
 *               the receivers have all N × listeners; the per-thread CPU of that fixed workload. After a warm-up
 *               of N/20 publishes, all delivered.
 *   step        publishing at a fixed rate (paced-wrk.ts); it passes when every delivery arrives, the p99 of
 *               publish → received is under 1 s, and the deliveries not yet received when publishing ends are
 *               under one second of traffic. After a warm-up at half the rate, all delivered.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { meterCpu, notePeak, type Ctx } from "./context.ts";
import { BENCH_KEY, makeQueue, startFanout, type FanoutServer } from "./fanout-server.ts";
import { runH2load, type Load } from "./loadgen.ts";
import { publishAtRate } from "./paced-wrk.ts";
import { wallMs } from "./payload.ts";
import { threadCpuMeter, type ThreadCpu } from "./proc-stats.ts";
import type { Timing } from "./receiver-client.ts";
import { measureIngest, wrkWarmup } from "./sections/ingest.ts";

export type Bin = { name: string; path: string };
export type Ingest = { load: Load; peakKb: number };
export type EndToEnd = { rate: number | null; published: number; delivered: number; expected: number; cpu: ThreadCpu; peakKb: number };
export type Step = {
  rate: number; pass: boolean; reasons: string[]; published: number; achieved: number; backlog: number;
  keptUp: number; // msg/s whose deliveries had all arrived when publishing ended (the rate published when unknown)
  delivered: number; expected: number; timing: Timing; publishP99: number | null; peakKb: number;
  stopped?: string; // why the step was stopped before its time
};

const CONNECTIONS = 64;
// Paced publishing keeps rate × latency requests in flight whatever the connections; more of them lets a
// server that stalls for a moment be caught up with instead of capping the rate at 64 / latency.
const PACED_CONNECTIONS = 128;
export const MAX_P99_MS = 1000;
const MIN_ACHIEVED = 0.97; // of the rate asked: below, the server did not take the messages at that pace
const WARMUP_SHARE = 0.05; // of an end-to-end run's messages
const WARMUP_RATE = 0.5; // of a step's rate, for the warm-up's whole seconds
const LATE_SHARE_STOP = 0.02; // of a step's deliveries already over 1 s late: twice what its p99 allows

let serial = 0;

/** A fresh server (TLS off) with one queue of `listeners` listeners; stop() notes its peak RSS and removes its files. */
async function serve(ctx: Ctx, bin: Bin, run: string, listeners: number) {
  const dir = join(ctx.dir, `throughput-${++serial}`);
  const server: FanoutServer = await startFanout({ binary: bin.path, db: join(dir, "fanout.db"), env: { FANOUT_TLS: "off" },
    ttlMs: ctx.plan.deadlineMs });
  const stop = async () => {
    const { peakKb } = await server.stop();
    notePeak(ctx, `throughput ${bin.name}: ${run}`, peakKb);
    rmSync(dir, { recursive: true, force: true });
    return peakKb;
  };
  try {
    const urls = Array.from({ length: listeners }, (_, i) => ctx.receivers.url(i));
    const { queueId } = await makeQueue(server, `throughput-${listeners}`, urls);
    await ctx.receivers.reset();
    return { server, url: `${server.url}/v1/queues/${queueId}/messages`, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

const plural = (n: number) => `${n} listener${n > 1 ? "s" : ""}`;

/**
 * Waits until every delivery of what the server has committed (its counter less `base`) has arrived. Requests cut
 * off in flight when wrk stopped may commit after a read of the counter, so it is read again after each wait
 * until it no longer moves.
 */
async function settle(ctx: Ctx, url: string, listeners: number, base: number) {
  let published = (await publishedTotal(url)) - base;
  for (;;) {
    const arrivals = await ctx.receivers.waitFor(published * listeners, ctx.plan.stallMs);
    const again = (await publishedTotal(url)) - base;
    if (!arrivals.complete || again === published) return { published, delivered: arrivals.count, complete: arrivals.complete };
    published = again;
  }
}

/** A fresh process runs its first requests cold (JIT tiers, page cache): traffic before the measured part, every
 * delivery of it arrived, and the receivers' counts cleared, so a run starts warm with nothing behind. Returns
 * the messages it published. */
async function warmUp(ctx: Ctx, url: string, listeners: number, publish: () => Promise<unknown>): Promise<number> {
  await publish();
  const warm = await settle(ctx, url, listeners, 0);
  if (!warm.complete) throw new Error(`warm-up: ${warm.delivered} of ${warm.published * listeners} deliveries arrived`);
  await ctx.receivers.reset();
  return warm.published;
}

export async function ingestRun(ctx: Ctx, bin: Bin, listeners: number, meter: boolean): Promise<Ingest> {
  const s = await serve(ctx, bin, `ingest ${plural(listeners)}`, listeners);
  let load: Load;
  try {
    const target = { url: s.url, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const label = `throughput ${bin.name} ${plural(listeners)}, no TLS`;
    load = await measureIngest(ctx, label, target, s.server.pid, "h1", ctx.plan.throughput.ingestSeconds, meter);
  } catch (e) {
    await s.stop();
    throw e;
  }
  return { load, peakKb: await s.stop() };
}

export async function endToEndRun(ctx: Ctx, bin: Bin, listeners: number, meter: boolean): Promise<EndToEnd> {
  const messages = ctx.plan.throughput.endToEndMessages;
  const run = `end to end ${messages.toLocaleString("en-US")} × ${plural(listeners)}`;
  const s = await serve(ctx, bin, run, listeners);
  try {
    const target = { url: s.url, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const burst = (count: number) => runH2load(target, { clients: CONNECTIONS, streams: 1, count, h1: true });
    await warmUp(ctx, s.server.url, listeners, () => burst(Math.ceil(messages * WARMUP_SHARE)));
    const cpu = threadCpuMeter(s.server.pid);
    const done = meter ? meterCpu(ctx, `throughput ${bin.name}: ${run}`, s.server.pid) : undefined;
    const startedAt = wallMs();
    const pub = await burst(messages);
    const published = messages - pub.failures;
    const arrivals = await ctx.receivers.waitFor(published * listeners, ctx.plan.stallMs);
    const threads = cpu();
    done?.(pub.clientCpu);
    const rate = arrivals.complete && arrivals.last !== null ? arrivals.count / ((arrivals.last - startedAt) / 1000) : null;
    return { rate, published, delivered: arrivals.count, expected: published * listeners, cpu: threads, peakKb: await s.stop() };
  } catch (e) {
    await s.stop();
    throw e;
  }
}

/** Messages the server committed, from its own counter (the load generator does not count requests cut off
 * in flight when it stops, which the server may still have committed). */
async function publishedTotal(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^fanout_messages_published_total(?:\{[^}]*\})? (\d+)/gm)) total += Number(m[1]);
  return total;
}

/**
 * Publishes at `rate` while watching the receivers. Every delivery due (by the schedule) before the last second
 * and not arrived yet is already more than 1 s late: once those are over 2 % of the step's deliveries (and over a
 * second of traffic, a margin for the schedule's start), its p99 cannot come in under 1 s however the rest goes,
 * and the step is stopped there.
 */
async function publishWatched(ctx: Ctx, url: string, rate: number, listeners: number) {
  const seconds = ctx.plan.throughput.stepSeconds;
  const perSecond = rate * listeners;
  const stop = new AbortController();
  const started = performance.now();
  let watching = true;
  let late = 0;
  const watch = (async () => {
    while (watching && !stop.signal.aborted) {
      await Bun.sleep(1000);
      const elapsed = (performance.now() - started) / 1000;
      late = perSecond * (elapsed - 1) - (await ctx.receivers.stats()).count;
      if (watching && late > Math.max(LATE_SHARE_STOP * seconds, 1) * perSecond) stop.abort();
    }
  })();
  try {
    const load = await publishAtRate(ctx.dir, { url, key: BENCH_KEY }, rate, seconds, PACED_CONNECTIONS, stop.signal);
    const elapsed = (performance.now() - started) / 1000;
    const stopped = stop.signal.aborted ? `stopped after ${elapsed.toFixed(0)} s, ${Math.round(late)} deliveries over 1 s late` : undefined;
    return { load, seconds: Math.min(seconds, elapsed), stopped };
  } finally {
    watching = false;
    await watch;
  }
}

export async function stepRun(ctx: Ctx, bin: Bin, listeners: number, rate: number): Promise<Step> {
  const s = await serve(ctx, bin, `${rate}/s to ${plural(listeners)}`, listeners);
  try {
    const paced = { url: s.url, key: BENCH_KEY };
    const warmRun = () => publishAtRate(ctx.dir, paced, rate * WARMUP_RATE, wrkWarmup(ctx), PACED_CONNECTIONS);
    const warm = await warmUp(ctx, s.server.url, listeners, warmRun);
    await ctx.receivers.time(true);
    const { load, seconds, stopped } = await publishWatched(ctx, s.url, rate, listeners);
    // Arrivals first, then the count published, so a delivery that lands in between cannot hide backlog.
    const receivedAtEnd = (await ctx.receivers.stats()).count;
    let published = (await publishedTotal(s.server.url)) - warm;
    const backlog = published * listeners - receivedAtEnd;
    let delivered = receivedAtEnd;
    if (!stopped && backlog < rate * listeners) ({ published, delivered } = await settle(ctx, s.server.url, listeners, warm));
    const timing = await ctx.receivers.timing();
    await ctx.receivers.time(false);
    const peakKb = await s.stop();
    // Deliveries trail publishing by their delay, so over the first seconds of a step stopped early their pace
    // reads low: only a step that ran a third of its time says how fast they kept up.
    const ranLong = seconds >= ctx.plan.throughput.stepSeconds / 3;
    const keptUp = ranLong ? Math.min(load.okPerSec, receivedAtEnd / listeners / seconds) : load.okPerSec;
    return judge({ rate, published, achieved: load.okPerSec, backlog, keptUp, delivered, expected: published * listeners, timing,
      publishP99: load.p99, peakKb, stopped }, load.failures, listeners);
  } catch (e) {
    await ctx.receivers.time(false);
    await s.stop();
    throw e;
  }
}

function judge(s: Omit<Step, "pass" | "reasons">, failures: number, listeners: number): Step {
  const reasons: string[] = s.stopped ? [s.stopped] : [];
  if (failures > 0) reasons.push(`${failures} publishes failed`);
  if (s.achieved < MIN_ACHIEVED * s.rate) reasons.push(`published ${Math.round(s.achieved)}/s`);
  if (s.backlog >= s.rate * listeners) reasons.push(`${s.backlog} deliveries behind when publishing ended`);
  else if (!s.stopped && s.delivered < s.expected) reasons.push(`${s.expected - s.delivered} deliveries never arrived`);
  if (s.timing.count < Math.min(s.delivered, s.expected)) reasons.push(`only ${s.timing.count} deliveries carried a publish time`);
  if (s.timing.p99 === null || s.timing.p99 >= MAX_P99_MS) reasons.push(`p99 ${s.timing.p99?.toFixed(0) ?? "—"} ms`);
  return { ...s, pass: reasons.length === 0, reasons };
}
