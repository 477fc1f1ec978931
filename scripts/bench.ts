/**
 * `npm run bench`: measures the compiled dist/fanout on 127.0.0.1 beside same-run baselines and prints one table
 * (and a CPU table as evidence of where time goes); the same figures go to .bench/results.json.
 * Sections: startup (start time, idle memory, size), throughput (the sustained publish-and-deliver rate to 1 and
 * 10 listeners, end to end and ingest with 10 listeners, CPU per message of the API thread and of the delivery
 * worker; with --compare <binary>, beside a second binary in alternated rounds), ingest (HTTP/1.1 and HTTP/2,
 * durability normal and full), fanout (1, 10, 100 listeners: sustained deliveries and publish-to-received delay),
 * filters (100 listeners whose filters each take a tenth of the messages beside 10 without filters), pace (FIFO
 * throughput, rate-limit accuracy, fan-out beside a FIFO and a rate-limited listener),
 * backlog (ingest and drain beside a million held deliveries), recovery (ingest while retention deletes, and while
 * a replay drains, a million), hostile (publishing beside clients that send deep bodies and backtracking-prone
 * data), metrics (ingest while /metrics is scraped every second), postgres (ingest, fan-out, two instances against
 * PostgreSQL, and the database's CPU for the rows a delivered message needs at least). `--quick` shrinks every size
 * for a smoke check of under three minutes.
 * Every child process is killed when the bench ends, however it ends; the whole run has a deadline.
 * Needs wrk and h2load (Debian packages wrk, nghttp2-client).
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { join } from "node:path";
import { parsePlan, ROOT, type Plan, type Section } from "./bench/options.ts";
import { installCleanup, killAll, trackTempDir } from "./bench/procs.ts";
import { messageBody } from "./bench/payload.ts";
import { Receivers } from "./bench/receiver-client.ts";
import { log, type Ctx } from "./bench/context.ts";
import { figure, mb, renderCpu, renderFigures, writeJson } from "./bench/report.ts";
import { startupSection } from "./bench/sections/startup.ts";
import { throughputSection } from "./bench/sections/throughput.ts";
import { ingestSection } from "./bench/sections/ingest.ts";
import { fanoutSection } from "./bench/sections/fanout.ts";
import { filtersSection } from "./bench/sections/filters.ts";
import { paceSection } from "./bench/sections/pace.ts";
import { backlogSection } from "./bench/sections/backlog.ts";
import { hostileSection } from "./bench/sections/hostile.ts";
import { recoverySection } from "./bench/sections/recovery.ts";
import { metricsSection } from "./bench/sections/metrics.ts";
import { postgresSection } from "./bench/sections/postgres.ts";

const SECTION_RUNS: Record<Section, (ctx: Ctx) => Promise<void>> = {
  startup: startupSection, throughput: throughputSection, ingest: ingestSection, fanout: fanoutSection, filters: filtersSection, pace: paceSection, backlog: backlogSection,
  recovery: recoverySection, hostile: hostileSection, metrics: metricsSection, postgres: postgresSection,
};

function preflight(plan: Plan): void {
  const missing = ["wrk", "h2load", "timeout"].filter((tool) => !Bun.which(tool));
  if (missing.length) throw new Error(`missing ${missing.join(", ")}: apt-get install wrk nghttp2-client`);
  if (!existsSync(plan.binary)) throw new Error(`${plan.binary} not found: run bun scripts/build.ts first`);
  if (plan.compare && !existsSync(plan.compare)) throw new Error(`--compare ${plan.compare} not found`);
}

/** A private executable copy of `binary` in `dir`. */
function privateCopy(binary: string, dir: string, name: string): string {
  const path = join(dir, name);
  copyFileSync(binary, path);
  chmodSync(path, 0o755);
  return path;
}

/** A bench killed by SIGKILL cannot remove its directory (a backlog database is over 1 GB): the next run does,
 * for directories whose bench process is gone. */
function removeStaleDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^fanout-bench-(\d+)-/.exec(name)?.[1] ?? 0);
    if (pid && !existsSync(`/proc/${pid}`)) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** Informational: whether the delivery worker in the source tree is still the placeholder that delivers nothing. */
function deliveryWorker(): string {
  const file = join(ROOT, "src", "delivery", "supervisor.ts");
  return existsSync(file) && readFileSync(file, "utf8").startsWith("// PLACEHOLDER") ? "placeholder" : "present";
}

/** A private directory, a private copy of the binary, the message body and the receivers. */
async function setUp(plan: Plan): Promise<Ctx> {
  removeStaleDirs();
  const dir = mkdtempSync(join(tmpdir(), `fanout-bench-${process.pid}-`));
  trackTempDir(dir);
  // Colleagues rebuild dist/fanout while the bench runs (npm test builds it): measure a private copy.
  const measured = { ...plan, binary: privateCopy(plan.binary, dir, "fanout"),
    compare: plan.compare && privateCopy(plan.compare, dir, "fanout-compared") };
  const body = messageBody();
  const bodyFile = join(dir, "body.json");
  writeFileSync(bodyFile, body);
  const receivers = await Receivers.start(Math.max(2, ...plan.fanout.map((c) => c.listeners)), plan.deadlineMs);
  return { plan: measured, dir, body, bodyFile, receivers, figures: [], cpu: [], details: {}, peaks: { fanoutKb: 0, baselineKb: 0, fanoutBy: {} } };
}

/** Peak RSS is a figure of the whole run: the largest VmHWM of any fanout process, and which run reached it. */
function addPeakRss(ctx: Ctx): void {
  if (ctx.peaks.fanoutKb === 0) return;
  const [run] = Object.entries(ctx.peaks.fanoutBy).sort((a, b) => b[1] - a[1])[0]!;
  ctx.figures.push(figure({ section: "memory", name: "peak RSS during the runs", unit: "MB", value: mb(ctx.peaks.fanoutKb),
    baseline: ctx.peaks.baselineKb ? mb(ctx.peaks.baselineKb) : null, baselineName: "peak of the ingest baseline",
    target: { kind: "<", value: 200 }, note: `reached in: ${run}` }));
  ctx.details.peakRssKb = ctx.peaks;
}

function publish(ctx: Ctx, plan: Plan, seconds: number, errors: Record<string, string>): void {
  const meta = { date: new Date().toISOString(), quick: plan.quick, seconds, cpus: cpus().length, cpu: cpus()[0]?.model,
    bun: Bun.version, binary: plan.binary, binaryBuilt: statSync(plan.binary).mtime.toISOString(), deliveryWorker: deliveryWorker(), plan };
  console.log(`\nfanout bench${plan.quick ? " --quick" : ""} — ${meta.date}, ${meta.cpus} cores, bun ${Bun.version}, ${seconds.toFixed(0)} s, binary built ${meta.binaryBuilt}\n`);
  console.log(renderFigures(ctx.figures));
  console.log(`\n${renderCpu(ctx.cpu)}`);
  writeJson(plan.out, { meta, figures: ctx.figures, cpu: ctx.cpu, details: ctx.details, errors });
  console.log(`\nwritten: ${plan.out}`);
}

async function main(): Promise<number> {
  const plan = parsePlan(process.argv.slice(2));
  const endDeadline = installCleanup(plan.deadlineMs);
  preflight(plan);
  const ctx = await setUp(plan);
  const started = performance.now();
  const errors: Record<string, string> = {};
  for (const section of plan.sections) {
    log(`— ${section}`);
    try {
      await SECTION_RUNS[section](ctx);
    } catch (e) {
      errors[section] = String((e as Error)?.stack ?? e); // reported, and the other sections still run
      log(`${section} failed: ${errors[section]}`);
    }
  }
  addPeakRss(ctx);
  publish(ctx, plan, (performance.now() - started) / 1000, errors);
  endDeadline();
  await ctx.receivers.stop();
  return Object.keys(errors).length ? 1 : 0;
}

const code = await main().catch((e) => {
  console.error(`bench: ${(e as Error)?.stack ?? e}`);
  return 1;
});
killAll();
process.exit(code);
