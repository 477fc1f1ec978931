/**
 * Recovery: what the background work of running for months costs ingest (retention and replays, docs/delivery.md).
 *   retention: ingest while a retention sweep deletes 1,000,000 final messages, beside the same database on a
 *              server that keeps everything (--retention 0); target ≥ 0.9.
 *   replay:    ingest while a replay of 1,000,000 missed deliveries drains to a live receiver, beside the same
 *              database without the replay; target ≥ 0.8.
 * Each pair of servers is measured in alternated rounds, as the backlog section does. The server not being
 * measured is stopped with SIGSTOP meanwhile: the one sweeping or replaying would otherwise go on using the
 * machine while its baseline is measured.
 */
import { join } from "node:path";
import { log, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout, type FanoutServer } from "../fanout-server.ts";
import { measureIngest, median, roundsNote } from "./ingest.ts";
import type { Load } from "../loadgen.ts";
import { prefillFinal } from "../prefill.ts";
import { figure } from "../report.ts";
import { idFloor } from "../../../src/lib/ids.ts";

const LIVE = 0;
const DAY_MS = 86_400_000;

type Variant = {
  label: string;
  server: FanoutServer;
  ingest(round: number, meter: boolean): Promise<Load>;
};

/** A server on a database of `messages` final deliveries (made `ageMs` ago) to one listener of queue "old". */
async function prepared(ctx: Ctx, label: string, state: "acknowledged" | "missed", ageMs: number, env: Record<string, string>) {
  const db = join(ctx.dir, `recovery-${label}`, "fanout.db");
  const setup = await startFanout({ binary: ctx.plan.binary, db, ttlMs: 120_000 });
  const old = await makeQueue(setup, "old", [ctx.receivers.url(LIVE)]);
  const bench = await makeQueue(setup, "bench", []);
  const { exitCode } = await setup.stop();
  if (exitCode !== 0) throw new Error(`fanout did not stop cleanly (${exitCode}) before the prefill`);
  const createdAt = Date.now() - ageMs;
  const data = JSON.stringify(JSON.parse(ctx.body).data);
  const filled = prefillFinal(db, { queueId: old.queueId, listenerId: old.listenerIds[0]!, messages: ctx.plan.backlogDeliveries, data, state, createdAt },
    idFloor("message", createdAt));
  log(`${label}: prefilled ${ctx.plan.backlogDeliveries} ${state} in ${filled.seconds.toFixed(1)} s (${(filled.bytes / 1048576).toFixed(0)} MiB)`);
  const server = await startFanout({ binary: ctx.plan.binary, db, ttlMs: ctx.plan.deadlineMs, env });
  const target = { url: `${server.url}/v1/queues/${bench.queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const variant: Variant = {
    label, server,
    async ingest(round, meter) {
      const notify = ctx.receivers.url(LIVE);
      const { listener } = await server.api("POST", `/queues/${bench.queueId}/listeners`,
        { name: `round-${round}`, notify_url: notify, liveness_url: new URL("/health", notify).href });
      const load = await measureIngest(ctx, label, target, server.pid, "h1", ctx.plan.pairSeconds, meter);
      await server.api("DELETE", `/queues/${bench.queueId}/listeners/${listener.id}`);
      return load;
    },
  };
  return { variant, old, createdAt };
}

type Round = { baseline: Load; busy: Load; ratio: number };

/** Alternated rounds; the server not measured is frozen (SIGSTOP) for the other's run. */
async function rounds(ctx: Ctx, baseline: Variant, busy: Variant): Promise<Round[]> {
  const list: Round[] = [];
  const freeze = (v: Variant, on: boolean) => process.kill(v.server.pid, on ? "SIGSTOP" : "SIGCONT");
  for (let round = 0; round < ctx.plan.pairRounds; round++) {
    const order = round % 2 === 0 ? [baseline, busy] : [busy, baseline];
    const loads = new Map<Variant, Load>();
    for (const v of order) {
      const other = v === baseline ? busy : baseline;
      freeze(other, true);
      try {
        loads.set(v, await v.ingest(round, round === 0));
      } finally {
        freeze(other, false);
      }
    }
    const b = loads.get(baseline)!;
    const s = loads.get(busy)!;
    list.push({ baseline: b, busy: s, ratio: s.okPerSec / b.okPerSec });
  }
  return list.sort((x, y) => x.ratio - y.ratio);
}

async function stopAll(ctx: Ctx, ...variants: (Variant | undefined)[]) {
  for (const v of variants) {
    if (!v) continue;
    process.kill(v.server.pid, "SIGCONT");
    notePeak(ctx, `recovery ${v.label}`, (await v.server.stop()).peakKb);
  }
}

const notes = (...parts: (string | undefined)[]) => parts.filter(Boolean).join("; ");

async function messageCount(server: FanoutServer, queueId: string): Promise<number> {
  const res = await fetch(`${server.url}/v1/queues/${queueId}/messages?per_page=1`, { tls: { rejectUnauthorized: false }, headers: { "x-api-key": BENCH_KEY } });
  await res.arrayBuffer();
  return Number(res.headers.get("x-total-count"));
}

async function retention(ctx: Ctx): Promise<void> {
  const n = ctx.plan.backlogDeliveries;
  let keep: Variant | undefined;
  let sweep: Variant | undefined;
  try {
    keep = (await prepared(ctx, "retention-off", "acknowledged", 40 * DAY_MS, { FANOUT_RETENTION: "0" })).variant;
    const made = await prepared(ctx, "retention-30d", "acknowledged", 40 * DAY_MS, { FANOUT_RETENTION: "30d" });
    sweep = made.variant;
    const measured = await rounds(ctx, keep, sweep);
    const left = await messageCount(sweep.server, made.old.queueId);
    const m = median(measured);
    ctx.figures.push(figure({ section: "recovery", name: `ingest HTTP/1.1 while retention deletes ${n.toLocaleString("en-US")} messages`, unit: "msg/s",
      value: m.busy.okPerSec, baseline: m.baseline.okPerSec, baselineName: "same database, --retention 0", target: { kind: "ratio>=", value: 0.9 },
      note: notes(roundsNote(measured), `${(n - left).toLocaleString("en-US")} deleted by the end of the rounds`) }));
    ctx.details.retention = { rounds: measured, deleted: n - left };
  } finally {
    await stopAll(ctx, keep, sweep);
  }
}

async function replay(ctx: Ctx): Promise<void> {
  const n = ctx.plan.backlogDeliveries;
  let idle: Variant | undefined;
  let replaying: Variant | undefined;
  try {
    idle = (await prepared(ctx, "replay-off", "missed", DAY_MS, { FANOUT_RETENTION: "0" })).variant;
    const made = await prepared(ctx, "replaying", "missed", DAY_MS, { FANOUT_RETENTION: "0" });
    replaying = made.variant;
    await ctx.receivers.reset();
    const started = performance.now();
    const { replayed } = await replaying.server.api("POST", `/queues/${made.old.queueId}/listeners/${made.old.listenerIds[0]}/replay`,
      { since: made.createdAt - 1000 });
    log(`replay accepted ${replayed} deliveries in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const measured = await rounds(ctx, idle, replaying);
    const arrived = (await ctx.receivers.stats()).perPort[LIVE] ?? 0;
    const m = median(measured);
    ctx.figures.push(figure({ section: "recovery", name: `ingest HTTP/1.1 while a replay of ${n.toLocaleString("en-US")} deliveries drains`, unit: "msg/s",
      value: m.busy.okPerSec, baseline: m.baseline.okPerSec, baselineName: "same database, no replay", target: { kind: "ratio>=", value: 0.8 },
      note: notes(roundsNote(measured), `${replayed} replayed, about ${arrived.toLocaleString("en-US")} deliveries reached the receiver during the rounds (ingest's included)`) }));
    ctx.details.replay = { rounds: measured, replayed, arrived };
  } finally {
    await stopAll(ctx, idle, replaying);
  }
}

export async function recoverySection(ctx: Ctx): Promise<void> {
  await retention(ctx);
  await replay(ctx);
}
