/**
 * Start and memory: time from spawn to the first 200 from /healthz (the first start on an empty database, which
 * migrates and makes a certificate, then the median of further starts on that database), resident memory after
 * a second of idling, and the binary's size. Baselines: the bare Bun.serve of the ingest baseline (TLS + SQLite,
 * started from source by the same Bun) and the Bun runtime's own size, which every compiled executable embeds.
 */
import { join } from "node:path";
import { realpathSync, statSync } from "node:fs";
import { log, type Ctx } from "../context.ts";
import { startFanout } from "../fanout-server.ts";
import { startBaselineIngest } from "../baselines.ts";
import { BUN } from "../procs.ts";
import { memoryKb } from "../proc-stats.ts";
import { figure, mb } from "../report.ts";
import { median } from "../stats.ts";

const IDLE_MS = 1000;

async function fanoutStarts(ctx: Ctx) {
  const db = join(ctx.dir, "startup", "fanout.db");
  const times: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i <= ctx.plan.startups; i++) {
    const server = await startFanout({ binary: ctx.plan.binary, db, ttlMs: 60_000 });
    times.push(server.readyMs);
    await Bun.sleep(IDLE_MS);
    idle.push(memoryKb(server.pid)?.rssKb ?? 0);
    const { exitCode } = await server.stop();
    if (exitCode !== 0) log(`fanout exited with ${exitCode} on SIGTERM`);
  }
  return { first: times[0]!, again: times.slice(1), idleKb: idle };
}

async function baselineStarts(ctx: Ctx) {
  const times: number[] = [];
  const idle: number[] = [];
  for (let i = 0; i < ctx.plan.startups; i++) {
    const server = await startBaselineIngest(join(ctx.dir, "startup", `baseline-${i}.db`), "normal", 60_000);
    times.push(server.readyMs);
    await Bun.sleep(IDLE_MS);
    idle.push(memoryKb(server.pid)?.rssKb ?? 0);
    await server.stop();
  }
  return { times, idleKb: idle };
}

export async function startupSection(ctx: Ctx): Promise<void> {
  const fan = await fanoutStarts(ctx);
  const base = await baselineStarts(ctx);
  const startMs = median(fan.again)!;
  log(`start: first ${fan.first.toFixed(0)} ms, then median ${startMs.toFixed(0)} ms; idle RSS ${(median(fan.idleKb)! / 1024).toFixed(1)} MB`);
  const baseline = "bare Bun.serve TLS + SQLite";
  ctx.figures.push(figure({ section: "startup", name: `start to /healthz (median of ${fan.again.length})`, unit: "s", value: startMs / 1000,
    baseline: median(base.times)! / 1000, baselineName: baseline, note: `first start on an empty database: ${fan.first.toFixed(0)} ms` }));
  ctx.figures.push(figure({ section: "startup", name: "idle RSS after start", unit: "MB", value: mb(median(fan.idleKb)), baseline: mb(median(base.idleKb)), baselineName: baseline }));
  const size = statSync(ctx.plan.binary).size / 1048576;
  const runtime = statSync(realpathSync(BUN)).size / 1048576;
  ctx.figures.push(figure({ section: "startup", name: "binary size", unit: "MB", value: size, baseline: runtime, baselineName: "the bun runtime itself" }));
  ctx.details.startup = { fanout: fan, baseline: base, binaryBytes: size * 1048576 };
}
