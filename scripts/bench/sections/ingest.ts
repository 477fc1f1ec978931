/**
 * Ingest: POST /v1/queues/{q}/messages with the 1 KiB body, over HTTPS, HTTP/1.1 (wrk, 64 connections) and
 * HTTP/2 (h2load, multiplexed), against fanout (a queue with one listener, a receiver answering 204) and
 * against the bare group-commit baseline, each run after a warm-up.
 *
 * The two are measured in rounds, back to back, the order alternating from round to round: this machine's
 * speed drifts by 20-30 % within minutes (docs/performance.md), and measuring all baseline runs first and all
 * fanout runs later put that drift into the ratio.
 * Each round has its own ratio; the round with the median ratio is the one reported, and the note lists them
 * all. Each round's listener is new and is deleted after its run (its deliveries with it), so no backlog
 * drains in the background while the baseline is measured and every round starts alike; the server itself
 * stays up, as a deployed one would. Then one round with --durability full beside the baseline at
 * synchronous=FULL.
 */
import { join } from "node:path";
import { mkdirSync } from "node:fs";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { startBaselineIngest, type BaselineIngest } from "../baselines.ts";
import { makeQueue, startFanout, BENCH_KEY } from "../fanout-server.ts";
import { runH2load, runWrk, wrkScript, type Load, type Target } from "../loadgen.ts";
import { figure } from "../report.ts";

type Proto = "h1" | "h2";
const PROTO_NAME: Record<Proto, string> = { h1: "HTTP/1.1", h2: "HTTP/2" };
type Durability = "normal" | "full";
type Round = { baseline: Load; fanout: Load; ratio: number; delivered: number };

/**
 * Warm-up, then the measured run of `seconds`. The server's and receivers' CPU is metered over the measured part
 * when `meter` is set (the ingest section meters the first round only, so the CPU table stays readable), and the
 * database server's when `database` starts its meter (PostgreSQL).
 */
export async function measureIngest(ctx: Ctx, label: string, target: Target, pid: number, proto: Proto,
  seconds: number, meter = true, database?: () => () => number): Promise<Load> {
  const p = ctx.plan;
  const run = `${label} ${PROTO_NAME[proto]}`;
  const metered = () => (meter ? meterCpu(ctx, run, pid, database) : () => undefined);
  if (proto === "h1") {
    const script = wrkScript(ctx.dir, target);
    await runWrk(target, script, p.wrkConnections, wrkWarmup(ctx));
    const done = metered();
    const load = await runWrk(target, script, p.wrkConnections, seconds);
    done(load.clientCpu);
    return report(run, load);
  }
  const logFile = join(ctx.dir, `h2load-${label.replace(/\W+/g, "-")}.log`);
  const done = metered(); // h2load's warm-up is inside this window; it is short
  const load = await runH2load(target, { clients: p.h2Clients, streams: p.h2Streams, seconds, warmup: p.warmupSeconds, logFile });
  done(load.clientCpu);
  return report(run, load);
}

/** wrk counts whole seconds. */
export const wrkWarmup = (ctx: Ctx) => Math.max(1, Math.round(ctx.plan.warmupSeconds));

function report(run: string, load: Load): Load {
  log(`${run}: ${Math.round(load.okPerSec)} msg/s, p50 ${load.p50?.toFixed(2)} ms, p99 ${load.p99?.toFixed(2)} ms, failures ${load.failures}`);
  if (load.failures > 0) log(`${run}: ${load.failures} requests failed:\n${load.raw?.slice(-600)}`);
  const { raw, ...rest } = load;
  return rest;
}

/** The fanout process of one durability, with one queue; each round adds a listener and deletes it after. */
async function fanoutUnder(ctx: Ctx, durability: Durability) {
  const server = await startFanout({ binary: ctx.plan.binary, db: join(ctx.dir, `ingest-${durability}`, "fanout.db"),
    env: { FANOUT_DURABILITY: durability }, ttlMs: ctx.plan.deadlineMs });
  const { queueId } = await makeQueue(server, "ingest", []);
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  return {
    async run(proto: Proto, round: number, meter: boolean) {
      const notify = ctx.receivers.url(0);
      const { listener } = await server.api("POST", `/queues/${queueId}/listeners`,
        { name: `l-${proto}-${round}`, notify_url: notify, liveness_url: new URL("/health", notify).href });
      await ctx.receivers.reset();
      const load = await measureIngest(ctx, `fanout ${durability}`, target, server.pid, proto, ctx.plan.pairSeconds, meter);
      const delivered = (await ctx.receivers.stats()).count;
      await server.api("DELETE", `/queues/${queueId}/listeners/${listener.id}`);
      return { load, delivered };
    },
    async stop() {
      const { exitCode, peakKb } = await server.stop();
      notePeak(ctx, `ingest ${durability}`, peakKb);
      if (exitCode !== 0) log(`fanout exited with ${exitCode} after the ingest runs`);
    },
  };
}

/** `count` rounds per protocol; returns each protocol's rounds, sorted by ratio. */
async function rounds(ctx: Ctx, durability: Durability, protos: Proto[], count: number) {
  const dir = join(ctx.dir, `baseline-${durability}`);
  mkdirSync(dir, { recursive: true });
  const base: BaselineIngest = await startBaselineIngest(join(dir, "baseline.db"), durability, ctx.plan.deadlineMs);
  const target = { url: `${base.url}/v1/queues/q_bench/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const fan = await fanoutUnder(ctx, durability);
  const out: Partial<Record<Proto, Round[]>> = {};
  for (const proto of protos) {
    const list: Round[] = [];
    for (let round = 0; round < count; round++) {
      const meter = round === 0;
      const baseline = () => measureIngest(ctx, `baseline ${durability}`, target, base.pid, proto, ctx.plan.pairSeconds, meter);
      let b: Load;
      let f: Awaited<ReturnType<typeof fan.run>>;
      if (round % 2 === 0) {
        b = await baseline();
        f = await fan.run(proto, round, meter);
      } else {
        f = await fan.run(proto, round, meter);
        b = await baseline();
      }
      list.push({ baseline: b, fanout: f.load, ratio: f.load.okPerSec / b.okPerSec, delivered: f.delivered });
    }
    out[proto] = list.sort((x, y) => x.ratio - y.ratio);
  }
  await fan.stop();
  ctx.peaks.baselineKb = Math.max(ctx.peaks.baselineKb, await base.stop());
  return out;
}

/** The round with the median ratio, of rounds sorted by ratio (the backlog section's too). */
export const median = <R extends { ratio: number }>(list: R[]) => list[Math.floor(list.length / 2)]!;
export const roundsNote = (list: { ratio: number }[]) =>
  list.length > 1 ? `rounds (each measured back to back): ${list.map((r) => r.ratio.toFixed(2)).join(", ")}; the median round is shown` : undefined;

export async function ingestSection(ctx: Ctx): Promise<void> {
  const normal = await rounds(ctx, "normal", ["h1", "h2"], ctx.plan.ingestRounds);
  const full = await rounds(ctx, "full", ["h1"], 1);
  const baselineName = "bare Bun.serve TLS + group commit";
  for (const proto of ["h1", "h2"] as Proto[]) {
    const m = median(normal[proto]!);
    const name = `ingest ${PROTO_NAME[proto]}`;
    const failures = normal[proto]!.reduce((n, r) => n + r.fanout.failures, 0);
    const notes = [roundsNote(normal[proto]!), failures > 0 ? `${failures} requests failed` : undefined].filter(Boolean);
    ctx.figures.push(figure({ section: "ingest", name, unit: "msg/s", value: m.fanout.okPerSec, baseline: m.baseline.okPerSec, baselineName,
      target: { kind: "ratio>=", value: 0.5 }, note: notes.length ? notes.join("; ") : undefined }));
    ctx.figures.push(figure({ section: "ingest", name: `${name} p50`, unit: "ms", value: m.fanout.p50, baseline: m.baseline.p50, baselineName }));
    ctx.figures.push(figure({ section: "ingest", name: `${name} p99`, unit: "ms", value: m.fanout.p99, baseline: m.baseline.p99, baselineName }));
  }
  const ff = full.h1![0]!;
  const fullBaseline = "same baseline, synchronous=FULL";
  ctx.figures.push(figure({ section: "ingest", name: "ingest HTTP/1.1 --durability full", unit: "msg/s", value: ff.fanout.okPerSec,
    baseline: ff.baseline.okPerSec, baselineName: fullBaseline,
    note: `${(ff.fanout.okPerSec / median(normal.h1!).fanout.okPerSec).toFixed(2)} of fanout's own durability normal figure` }));
  ctx.figures.push(figure({ section: "ingest", name: "ingest HTTP/1.1 --durability full p99", unit: "ms", value: ff.fanout.p99, baseline: ff.baseline.p99, baselineName: fullBaseline }));
  ctx.details.ingest = { normal, full };
}
