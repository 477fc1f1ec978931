/**
 * Ingest: POST /v1/queues/{q}/messages with the 1 KiB body, over HTTPS, HTTP/1.1 (wrk, 64 connections) and
 * HTTP/2 (h2load, multiplexed), against fanout (a queue with one listener, a receiver answering 204) and
 * against the bare group-commit baseline, each on a fresh database file, each run after a warm-up.
 * Then the same HTTP/1.1 run with --durability full beside the baseline at synchronous=FULL.
 */
import { join } from "node:path";
import { mkdirSync } from "node:fs";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { startBaselineIngest } from "../baselines.ts";
import { makeQueue, startFanout, BENCH_KEY } from "../fanout-server.ts";
import { runH2load, runWrk, wrkScript, type Load, type Target } from "../loadgen.ts";
import { figure } from "../report.ts";

type Proto = "h1" | "h2";
const PROTO_NAME: Record<Proto, string> = { h1: "HTTP/1.1", h2: "HTTP/2" };

/** Warm-up, then the measured run, with the server's and receivers' CPU metered over the measured part. */
export async function measureIngest(ctx: Ctx, label: string, target: Target, pid: number, proto: Proto): Promise<Load> {
  const p = ctx.plan;
  const run = `${label} ${PROTO_NAME[proto]}`;
  if (proto === "h1") {
    const script = wrkScript(ctx.dir, target);
    await runWrk(target, script, p.wrkConnections, Math.max(1, Math.round(p.warmupSeconds)));
    const done = meterCpu(ctx, run, pid);
    const load = await runWrk(target, script, p.wrkConnections, p.ingestSeconds);
    done(load.clientCpu);
    return report(run, load);
  }
  const logFile = join(ctx.dir, `h2load-${label.replace(/\W+/g, "-")}.log`);
  const done = meterCpu(ctx, run, pid); // h2load's warm-up is inside this window; it is short
  const load = await runH2load(target, { clients: p.h2Clients, streams: p.h2Streams, seconds: p.ingestSeconds, warmup: p.warmupSeconds, logFile });
  done(load.clientCpu);
  return report(run, load);
}

function report(run: string, load: Load): Load {
  log(`${run}: ${Math.round(load.okPerSec)} msg/s, p50 ${load.p50?.toFixed(2)} ms, p99 ${load.p99?.toFixed(2)} ms, failures ${load.failures}`);
  if (load.failures > 0) log(`${run}: ${load.failures} requests failed:\n${load.raw?.slice(-600)}`);
  const { raw, ...rest } = load;
  return rest;
}

async function baselineRuns(ctx: Ctx, sync: "normal" | "full", protos: Proto[]) {
  const dir = join(ctx.dir, `baseline-${sync}`);
  mkdirSync(dir, { recursive: true });
  const server = await startBaselineIngest(join(dir, "baseline.db"), sync, ctx.plan.deadlineMs);
  const target = { url: `${server.url}/v1/queues/q_bench/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const out: Partial<Record<Proto, Load>> = {};
  for (const proto of protos) out[proto] = await measureIngest(ctx, `baseline ${sync}`, target, server.pid, proto);
  ctx.peaks.baselineKb = Math.max(ctx.peaks.baselineKb, await server.stop());
  return out;
}

async function fanoutRuns(ctx: Ctx, durability: "normal" | "full", protos: Proto[]) {
  const dir = join(ctx.dir, `ingest-${durability}`);
  const server = await startFanout({ binary: ctx.plan.binary, db: join(dir, "fanout.db"), env: { FANOUT_DURABILITY: durability }, ttlMs: ctx.plan.deadlineMs });
  const { queueId } = await makeQueue(server, "ingest", [ctx.receivers.url(0)]);
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  await ctx.receivers.reset();
  const out: Partial<Record<Proto, Load>> = {};
  for (const proto of protos) out[proto] = await measureIngest(ctx, `fanout ${durability}`, target, server.pid, proto);
  const delivered = (await ctx.receivers.stats()).count;
  const { exitCode, peakKb } = await server.stop();
  notePeak(ctx, `ingest ${durability}`, peakKb);
  if (exitCode !== 0) log(`fanout exited with ${exitCode} after the ingest runs`);
  return { loads: out, delivered };
}

export async function ingestSection(ctx: Ctx): Promise<void> {
  const base = await baselineRuns(ctx, "normal", ["h1", "h2"]);
  const fan = await fanoutRuns(ctx, "normal", ["h1", "h2"]);
  const baseFull = await baselineRuns(ctx, "full", ["h1"]);
  const fanFull = await fanoutRuns(ctx, "full", ["h1"]);
  const baselineName = "bare Bun.serve TLS + group commit";
  for (const proto of ["h1", "h2"] as Proto[]) {
    const f = fan.loads[proto]!;
    const b = base[proto]!;
    const name = `ingest ${PROTO_NAME[proto]}`;
    const failed = f.failures > 0 ? `${f.failures} requests failed` : undefined;
    ctx.figures.push(figure({ section: "ingest", name, unit: "msg/s", value: f.okPerSec, baseline: b.okPerSec, baselineName, target: { kind: "ratio>=", value: 0.5 }, note: failed }));
    ctx.figures.push(figure({ section: "ingest", name: `${name} p50`, unit: "ms", value: f.p50, baseline: b.p50, baselineName }));
    ctx.figures.push(figure({ section: "ingest", name: `${name} p99`, unit: "ms", value: f.p99, baseline: b.p99, baselineName }));
  }
  const ff = fanFull.loads.h1!;
  const normal = fan.loads.h1!.okPerSec;
  ctx.figures.push(figure({ section: "ingest", name: "ingest HTTP/1.1 --durability full", unit: "msg/s", value: ff.okPerSec,
    baseline: baseFull.h1!.okPerSec, baselineName: "same baseline, synchronous=FULL",
    note: `${(ff.okPerSec / normal).toFixed(2)} of fanout's own durability normal figure` }));
  ctx.figures.push(figure({ section: "ingest", name: "ingest HTTP/1.1 --durability full p99", unit: "ms", value: ff.p99, baseline: baseFull.h1!.p99, baselineName: "same baseline, synchronous=FULL" }));
  ctx.details.ingest = { baseline: base, fanout: fan, baselineFull: baseFull, fanoutFull: fanFull };
}
