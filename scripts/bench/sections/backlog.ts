/**
 * Backlog: the same two measurements on two databases that differ only in held deliveries.
 * Each database gets, through the API, a queue "bench" with a live listener (receiver 0, 204) and a queue
 * "held" whose listener is down (its liveness URL answers 503; marked down as three failed probes leave it).
 * Then, by SQL (prefill.ts), `drain` pending deliveries to the live listener, and in the backlog database also
 * `backlog` pending deliveries to the down listener, which must wait. The server starts on it and we time
 *   drain:  the live deliveries reaching receiver 0 (sustained rate, 10th to 90th percentile arrival);
 *   ingest: then wrk over HTTP/1.1 as in the ingest section, into "bench".
 */
import { join } from "node:path";
import { log, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout } from "../fanout-server.ts";
import { measureIngest } from "./ingest.ts";
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
  return { queueId: bench.queueId, filled };
}

async function variant(ctx: Ctx, label: string, backlog: number) {
  const db = join(ctx.dir, `backlog-${label}`, "fanout.db");
  const { queueId, filled } = await prepare(ctx, db, backlog);
  await ctx.receivers.reset();
  const server = await startFanout({ binary: ctx.plan.binary, db, ttlMs: ctx.plan.deadlineMs });
  try {
    const arrivals = await ctx.receivers.waitFor(ctx.plan.drainDeliveries, ctx.plan.stallMs);
    // From /healthz answering to the last arrival: includes any sweep the worker makes before it sends.
    const drain = { ...arrivals, afterReadySeconds: arrivals.last === null ? null : (arrivals.last - server.readyAt) / 1000 };
    log(`${label}: drained ${drain.perPort[LIVE] ?? 0}/${ctx.plan.drainDeliveries} at ${Math.round(drain.rate ?? 0)}/s, done ${drain.afterReadySeconds?.toFixed(1)} s after start`);
    const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const ingest = await measureIngest(ctx, `${label} db`, target, server.pid, "h1");
    const heldArrived = (await ctx.receivers.stats()).perPort[HELD] ?? 0;
    return { drain, ingest, heldArrived, readyMs: server.readyMs, prefill: filled };
  } finally {
    const { peakKb } = await server.stop();
    notePeak(ctx, `backlog ${label}`, peakKb);
  }
}

export async function backlogSection(ctx: Ctx): Promise<void> {
  const held = ctx.plan.backlogDeliveries.toLocaleString("en-US");
  const empty = await variant(ctx, "empty", 0);
  const full = await variant(ctx, "backlog", ctx.plan.backlogDeliveries);
  const baselineName = "same, empty database";
  const notDelivered = (v: typeof empty) => (v.drain.count === 0 ? "not delivered: nothing drained before the stall bound" : undefined);
  const heldNote = full.heldArrived > 0 ? `${full.heldArrived} deliveries reached the down listener` : undefined;
  ctx.figures.push(figure({ section: "backlog", name: `ingest HTTP/1.1, ${held} held`, unit: "msg/s", value: full.ingest.okPerSec,
    baseline: empty.ingest.okPerSec, baselineName, target: { kind: "ratio>=", value: 0.8 }, note: heldNote }));
  ctx.figures.push(figure({ section: "backlog", name: `ingest p99, ${held} held`, unit: "ms", value: full.ingest.p99, baseline: empty.ingest.p99, baselineName }));
  ctx.figures.push(figure({ section: "backlog", name: `drain ${ctx.plan.drainDeliveries.toLocaleString("en-US")}, ${held} held`, unit: "deliveries/s",
    value: full.drain.count ? full.drain.rate : null, baseline: empty.drain.count ? empty.drain.rate : null, baselineName,
    note: notDelivered(full) ?? notDelivered(empty) ?? `all delivered ${full.drain.afterReadySeconds?.toFixed(1)} s after /healthz (empty: ${empty.drain.afterReadySeconds?.toFixed(1)} s)` }));
  ctx.figures.push(figure({ section: "backlog", name: `start to /healthz, ${held} held`, unit: "s", value: full.readyMs / 1000,
    baseline: empty.readyMs / 1000, baselineName }));
  ctx.details.backlog = { empty, backlog: full };
}
