/**
 * Backlog: the same two measurements on two databases that differ only in held deliveries.
 * Each database gets, through the API, a queue "bench" with a live listener (receiver 0, 204) and a queue
 * "held" whose listener is down (its liveness URL answers 503; marked down as three failed probes leave it).
 * Then, by SQL (prefill.ts), `drain` pending deliveries to the live listener, and in the backlog database also
 * `backlog` pending deliveries to the down listener, which must wait. A server starts on each, one after the
 * other, and we time
 *   drain:  the live deliveries reaching receiver 0 (sustained rate, 10th to 90th percentile arrival);
 *   ingest: then, with both servers up, wrk over HTTP/1.1 into "bench" of each, in alternating rounds.
 */
import { join } from "node:path";
import { log, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout } from "../fanout-server.ts";
import { measureIngest, median as medianRound, roundsNote } from "./ingest.ts";
import type { Load } from "../loadgen.ts";
import { prefill, type Fill } from "../prefill.ts";
import { figure } from "../report.ts";

const LIVE = 0; // receiver index of the live listener
const HELD = 1; // receiver index of the held listener's notify URL; nothing should arrive there

async function prepare(ctx: Ctx, db: string, backlog: number) {
  const server = await startFanout({ binary: ctx.plan.binary, db, ttlMs: 120_000 });
  const bench = await makeQueue(server, "bench", [ctx.receivers.url(LIVE)]);
  const held = await makeQueue(server, "held", [ctx.receivers.url(HELD)], () => ctx.receivers.url(HELD, "/down"));
  const { exitCode } = await server.stop();
  if (exitCode !== 0) throw new Error(`fanout did not stop cleanly (${exitCode}) before the prefill`);
  const data = JSON.stringify(JSON.parse(ctx.body).data);
  const fills: Fill[] = [{ queueId: bench.queueId, listenerId: bench.listenerIds[0]!, messages: ctx.plan.drainDeliveries, data }];
  if (backlog > 0) fills.push({ queueId: held.queueId, listenerId: held.listenerIds[0]!, messages: backlog, data, held: true });
  const filled = prefill(db, fills, held.listenerIds);
  log(`prefilled ${backlog} held + ${ctx.plan.drainDeliveries} live deliveries in ${filled.seconds.toFixed(1)} s (${(filled.bytes / 1048576).toFixed(0)} MiB)`);
  return { queueId: bench.queueId, listenerId: bench.listenerIds[0]!, filled };
}

type Variant = Awaited<ReturnType<typeof startVariant>>;

/**
 * A prepared database with its server up, once its live deliveries have drained. The drain's listener is then
 * deleted: each ingest round adds a listener of its own and deletes it after its run, as the ingest section
 * does, so no round's deliveries drain in the background while the other database is measured.
 */
async function startVariant(ctx: Ctx, label: string, backlog: number) {
  const db = join(ctx.dir, `backlog-${label}`, "fanout.db");
  const { queueId, listenerId, filled } = await prepare(ctx, db, backlog);
  await ctx.receivers.reset();
  const server = await startFanout({ binary: ctx.plan.binary, db, ttlMs: ctx.plan.deadlineMs });
  const arrivals = await ctx.receivers.waitFor(ctx.plan.drainDeliveries, ctx.plan.stallMs);
  // From /healthz answering to the last arrival: includes any sweep the worker makes before it sends.
  const drain = { ...arrivals, afterReadySeconds: arrivals.last === null ? null : (arrivals.last - server.readyAt) / 1000 };
  log(`${label}: drained ${drain.perPort[LIVE] ?? 0}/${ctx.plan.drainDeliveries} at ${Math.round(drain.rate ?? 0)}/s, done ${drain.afterReadySeconds?.toFixed(1)} s after start`);
  await server.api("DELETE", `/queues/${queueId}/listeners/${listenerId}`);
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  return {
    drain, readyMs: server.readyMs, prefill: filled,
    async ingest(round: number, meter: boolean): Promise<Load> {
      const notify = ctx.receivers.url(LIVE);
      const { listener } = await server.api("POST", `/queues/${queueId}/listeners`,
        { name: `round-${round}`, notify_url: notify, liveness_url: new URL("/health", notify).href });
      const load = await measureIngest(ctx, `${label} db`, target, server.pid, "h1", ctx.plan.pairSeconds, meter);
      await server.api("DELETE", `/queues/${queueId}/listeners/${listener.id}`);
      return load;
    },
    async stop() {
      const { peakKb } = await server.stop();
      notePeak(ctx, `backlog ${label}`, peakKb);
    },
  };
}

type Round = { empty: Load; backlog: Load; ratio: number };

/**
 * Ingest into both databases in rounds, back to back, the order alternating, as the ingest section measures
 * fanout beside its baseline: measured once each, one after the other, the ratio carried the machine's drift
 * (docs/performance.md).
 */
async function rounds(ctx: Ctx, empty: Variant, full: Variant): Promise<Round[]> {
  const list: Round[] = [];
  for (let round = 0; round < ctx.plan.pairRounds; round++) {
    const meter = round === 0;
    const [first, second] = round % 2 === 0 ? [empty, full] : [full, empty];
    const a = await first.ingest(round, meter);
    const b = await second.ingest(round, meter);
    const [e, f] = first === empty ? [a, b] : [b, a];
    list.push({ empty: e, backlog: f, ratio: f.okPerSec / e.okPerSec });
  }
  return list.sort((x, y) => x.ratio - y.ratio);
}

export async function backlogSection(ctx: Ctx): Promise<void> {
  const held = ctx.plan.backlogDeliveries.toLocaleString("en-US");
  const empty = await startVariant(ctx, "empty", 0);
  let full: Variant | undefined;
  let measured: Round[];
  let heldArrived: number;
  try {
    full = await startVariant(ctx, "backlog", ctx.plan.backlogDeliveries);
    measured = await rounds(ctx, empty, full);
    heldArrived = (await ctx.receivers.stats()).perPort[HELD] ?? 0;
  } finally {
    await empty.stop();
    await full?.stop();
  }
  const median = medianRound(measured);
  const baselineName = "same, empty database";
  const notDelivered = (v: Variant) => (v.drain.count === 0 ? "not delivered: nothing drained before the stall bound" : undefined);
  const heldNote = heldArrived > 0 ? `${heldArrived} deliveries reached the down listener` : undefined;
  const note = [roundsNote(measured), heldNote].filter(Boolean).join("; ") || undefined;
  ctx.figures.push(figure({ section: "backlog", name: `ingest HTTP/1.1, ${held} held`, unit: "msg/s", value: median.backlog.okPerSec,
    baseline: median.empty.okPerSec, baselineName, target: { kind: "ratio>=", value: 0.8 }, note }));
  ctx.figures.push(figure({ section: "backlog", name: `ingest p99, ${held} held`, unit: "ms", value: median.backlog.p99, baseline: median.empty.p99, baselineName }));
  ctx.figures.push(figure({ section: "backlog", name: `drain ${ctx.plan.drainDeliveries.toLocaleString("en-US")}, ${held} held`, unit: "deliveries/s",
    value: full.drain.count ? full.drain.rate : null, baseline: empty.drain.count ? empty.drain.rate : null, baselineName,
    note: notDelivered(full) ?? notDelivered(empty) ?? `all delivered ${full.drain.afterReadySeconds?.toFixed(1)} s after /healthz (empty: ${empty.drain.afterReadySeconds?.toFixed(1)} s)` }));
  ctx.figures.push(figure({ section: "backlog", name: `start to /healthz, ${held} held`, unit: "s", value: full.readyMs / 1000,
    baseline: empty.readyMs / 1000, baselineName }));
  const summary = (v: Variant) => ({ drain: v.drain, readyMs: v.readyMs, prefill: v.prefill });
  ctx.details.backlog = { empty: summary(empty), backlog: summary(full), rounds: measured, heldArrived };
}
