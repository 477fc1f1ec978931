/**
 * PostgreSQL (--db postgres://…), on FANOUT_BENCH_PG (postgres-db.ts), each part on databases of its own:
 * - ingest: as the ingest section measures SQLite (one listener, a receiver answering 204, rounds alternating
 *   with the baseline, the median round reported), beside a bare Bun.serve that inserts the same row into
 *   PostgreSQL with the same batching (baseline-ingest-postgres.ts);
 * - fan-out to 10 listeners and the publish-to-received delay, as the fanout section measures it;
 * - two instances on one database beside one: HTTP/1.1 ingest through one instance, then through two at once
 *   (half the connections each), alternating, each with one listener. On two cores both instances, the server
 *   and the load generator share the same CPUs, so this shows what a second instance costs and adds there, not
 *   the scaling of machines of their own.
 * - the database server's CPU per published and delivered message for the rows the delivery contract needs at
 *   least, beside the baseline's one insert, with no HTTP at all (postgres-floor.ts): the part of the gap to the
 *   ingest baseline that no code around the statements can close.
 * Skipped, with a note, when the server cannot be reached.
 */
import { log, notePeak, type Ctx } from "../context.ts";
import { startBaselineIngest } from "../baselines.ts";
import { makeQueue, startFanout, BENCH_KEY, type FanoutServer } from "../fanout-server.ts";
import { runWrk, wrkScript, type Load, type Target } from "../loadgen.ts";
import { figure } from "../report.ts";
import { measureIngest, median, roundsNote } from "./ingest.ts";
import { runCase } from "./fanout.ts";
import { benchDatabase, benchPostgresReachable, databaseCpu, dropBenchDatabases } from "../postgres-db.ts";
import { baselineFloor, fanoutFloor } from "../postgres-floor.ts";

type Proto = "h1" | "h2";
const PROTO_NAME: Record<Proto, string> = { h1: "HTTP/1.1", h2: "HTTP/2" };
const SECTION = "postgres";
const DB_POOL = "10";

const start = async (ctx: Ctx, db: string) => startFanout({ binary: ctx.plan.binary, db, env: { FANOUT_DB_POOL: DB_POOL }, ttlMs: ctx.plan.deadlineMs });

/** A new listener on `queueId` for the run, deleted (with its deliveries) after it. */
async function withListener<T>(server: FanoutServer, queueId: string, name: string, ctx: Ctx, run: () => Promise<T>): Promise<T> {
  const notify = ctx.receivers.url(0);
  const { listener } = await server.api("POST", `/queues/${queueId}/listeners`, { name, notify_url: notify, liveness_url: new URL("/health", notify).href });
  await ctx.receivers.reset();
  try {
    return await run();
  } finally {
    await server.api("DELETE", `/queues/${queueId}/listeners/${listener.id}`);
  }
}

async function ingest(ctx: Ctx): Promise<void> {
  const [baseDb, fanoutDb] = [await benchDatabase(), await benchDatabase()];
  const base = await startBaselineIngest(baseDb, "normal", ctx.plan.deadlineMs);
  const server = await start(ctx, fanoutDb);
  try {
    const { queueId } = await makeQueue(server, "ingest", []);
    const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const baseTarget = { url: `${base.url}/v1/queues/q_bench/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const details: Record<string, unknown> = {};
    for (const proto of ["h1", "h2"] as Proto[]) {
      const rounds: { baseline: Load; fanout: Load; ratio: number }[] = [];
      for (let round = 0; round < ctx.plan.postgresRounds; round++) {
        const meter = round === 0;
        const baseline = () => measureIngest(ctx, "baseline postgres", baseTarget, base.pid, proto, ctx.plan.pairSeconds, meter,
          () => databaseCpu(baseDb));
        const fanout = () => withListener(server, queueId, `l-${proto}-${round}`, ctx,
          () => measureIngest(ctx, "fanout postgres", target, server.pid, proto, ctx.plan.pairSeconds, meter, () => databaseCpu(fanoutDb)));
        let b: Load;
        let f: Load;
        if (round % 2 === 0) {
          b = await baseline();
          f = await fanout();
        } else {
          f = await fanout();
          b = await baseline();
        }
        rounds.push({ baseline: b, fanout: f, ratio: f.okPerSec / b.okPerSec });
      }
      rounds.sort((x, y) => x.ratio - y.ratio);
      const m = median(rounds);
      const name = `PostgreSQL ingest ${PROTO_NAME[proto]}`;
      const baselineName = "bare Bun.serve TLS + the same batched INSERT";
      ctx.figures.push(figure({ section: SECTION, name, unit: "msg/s", value: m.fanout.okPerSec, baseline: m.baseline.okPerSec, baselineName,
        target: { kind: "ratio>=", value: 0.5 }, note: roundsNote(rounds) }));
      ctx.figures.push(figure({ section: SECTION, name: `${name} p99`, unit: "ms", value: m.fanout.p99, baseline: m.baseline.p99, baselineName }));
      details[proto] = rounds;
    }
    ctx.details.postgresIngest = details;
  } finally {
    const { peakKb } = await server.stop();
    notePeak(ctx, "postgres ingest", peakKb);
    ctx.peaks.baselineKb = Math.max(ctx.peaks.baselineKb, await base.stop());
  }
}

async function fanout(ctx: Ctx): Promise<void> {
  const c = ctx.plan.postgresFanout;
  const server = await start(ctx, await benchDatabase());
  try {
    const urls = Array.from({ length: c.listeners }, (_, i) => ctx.receivers.url(i));
    const { queueId } = await makeQueue(server, "fanout", urls);
    ctx.details.postgresFanout = await runCase(ctx, server, queueId, c, { section: SECTION, prefix: "PostgreSQL " });
  } finally {
    const { peakKb } = await server.stop();
    notePeak(ctx, "postgres fanout", peakKb);
  }
}

/** HTTP/1.1 ingest through `servers` at once, the connections split between them; the sum of their rates. */
async function ingestThrough(ctx: Ctx, servers: FanoutServer[], queueId: string): Promise<number> {
  const targets: Target[] = servers.map((s) => ({ url: `${s.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile }));
  const connections = Math.floor(ctx.plan.wrkConnections / servers.length);
  const scripts = targets.map((t) => wrkScript(ctx.dir, t));
  await Promise.all(targets.map((t, i) => runWrk(t, scripts[i]!, connections, Math.max(1, Math.round(ctx.plan.warmupSeconds)))));
  const loads = await Promise.all(targets.map((t, i) => runWrk(t, scripts[i]!, connections, ctx.plan.pairSeconds)));
  return loads.reduce((sum, l) => sum + l.okPerSec, 0);
}

async function twoInstances(ctx: Ctx): Promise<void> {
  const db = await benchDatabase();
  const first = await start(ctx, db);
  let second: FanoutServer | null = null;
  const rounds: { one: number; two: number; ratio: number }[] = [];
  try {
    const { queueId } = await makeQueue(first, "instances", []);
    for (let round = 0; round < ctx.plan.postgresRounds; round++) {
      const one = await withListener(first, queueId, `one-${round}`, ctx, () => ingestThrough(ctx, [first], queueId));
      second = await start(ctx, db);
      const pair = [first, second];
      const two = await withListener(first, queueId, `two-${round}`, ctx, () => ingestThrough(ctx, pair, queueId));
      notePeak(ctx, "postgres second instance", (await second.stop()).peakKb);
      second = null;
      log(`postgres instances: one ${Math.round(one)} msg/s, two ${Math.round(two)} msg/s`);
      rounds.push({ one, two, ratio: two / one });
    }
    rounds.sort((x, y) => x.ratio - y.ratio);
    const m = median(rounds);
    ctx.figures.push(figure({ section: SECTION, name: "PostgreSQL ingest HTTP/1.1, two instances", unit: "msg/s", value: m.two, baseline: m.one,
      baselineName: "one instance on the same database", note: roundsNote(rounds) }));
    ctx.details.postgresInstances = rounds;
  } finally {
    if (second) await second.stop();
    notePeak(ctx, "postgres instances", (await first.stop()).peakKb);
  }
}

async function floor(ctx: Ctx): Promise<void> {
  const rounds: { baseline: number; publish: number; deliver: number; ratio: number }[] = [];
  for (let round = 0; round < ctx.plan.postgresRounds; round++) {
    const baseline = await baselineFloor(ctx.plan.pairSeconds);
    const { publish, deliver, deliveries } = await fanoutFloor(ctx.plan.pairSeconds);
    log(`postgres floor: baseline ${baseline.toFixed(1)} µs a row; publish ${publish.toFixed(1)} + deliver ${deliver.toFixed(1)} µs (${deliveries} deliveries)`);
    rounds.push({ baseline, publish, deliver, ratio: (publish + deliver) / baseline });
  }
  rounds.sort((x, y) => x.ratio - y.ratio);
  const m = median(rounds);
  ctx.figures.push(figure({ section: SECTION, name: "PostgreSQL server CPU per published and delivered message, its rows at least", unit: "µs",
    value: m.publish + m.deliver, baseline: m.baseline, baselineName: "the ingest baseline's one insert",
    note: [`publish ${m.publish.toFixed(0)} µs (message, delivery, usage event) + deliver ${m.deliver.toFixed(0)} µs (lease, settle, attempt)`,
      "no HTTP and no fanout process", roundsNote(rounds)].filter(Boolean).join("; ") }));
  ctx.details.postgresFloor = rounds;
}

export async function postgresSection(ctx: Ctx): Promise<void> {
  const unreachable = await benchPostgresReachable();
  if (unreachable) {
    log(`postgres: skipped: ${unreachable}`);
    ctx.figures.push(figure({ section: SECTION, name: "PostgreSQL", unit: "msg/s", value: null, baseline: null, baselineName: "—", note: `skipped: ${unreachable}` }));
    return;
  }
  try {
    await ingest(ctx);
    await fanout(ctx);
    await twoInstances(ctx);
    await floor(ctx);
  } finally {
    await dropBenchDatabases();
  }
}
