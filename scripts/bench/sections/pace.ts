/**
 * Pace and order (docs/delivery.md, "Pace and order"), each figure beside its same-run baseline:
 * - FIFO throughput: one FIFO listener whose receiver answers 1 ms after a request arrives, against bare fetch
 *   sending one request at a time to the same receiver (the bound round trips set). Target ≥ 0.7.
 * - Rate accuracy: a listener at rate_limit 100 with a backlog, its arrivals over 10 s against the limit; the
 *   figure is how far from the limit they are, in percent. Target < 5 %.
 * - Fairness: 10 unordered listeners on a queue that also has a FIFO and a rate-limited listener, against the same
 *   10 alone: deliveries a second to the 10, from the first publish until they have every message. Target ≥ 0.9.
 */
import { join } from "node:path";
import { log, notePeak, type Ctx } from "../context.ts";
import { runBaselineFanout } from "../baselines.ts";
import { makeQueue, startFanout, BENCH_KEY, type FanoutServer } from "../fanout-server.ts";
import { runH2load } from "../loadgen.ts";
import { figure } from "../report.ts";
import { wallMs } from "../payload.ts";

const RATE = 100;
const RATE_WINDOW_MS = 10_000;

async function publish(ctx: Ctx, server: FanoutServer, queueId: string, count: number) {
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  return runH2load(target, { clients: ctx.plan.h2Clients, streams: ctx.plan.h2Streams, count });
}

async function listener(server: FanoutServer, queueId: string, name: string, notify: string, settings: Record<string, unknown>) {
  await server.api("POST", `/queues/${queueId}/listeners`, { name, notify_url: notify, liveness_url: new URL("/health", notify).href, ...settings });
}

/** Until `port` has `n` arrivals (or no arrival for the stall bound); the wall time it reached them. */
async function untilPort(ctx: Ctx, ports: number[], n: number): Promise<number | null> {
  let last = -1;
  let changed = performance.now();
  for (;;) {
    const s = await ctx.receivers.stats();
    const least = Math.min(...ports.map((p) => s.perPort[p] ?? 0));
    if (least >= n) return wallMs();
    if (least !== last) [last, changed] = [least, performance.now()];
    else if (performance.now() - changed > ctx.plan.stallMs) return null;
    await Bun.sleep(20);
  }
}

async function fifoThroughput(ctx: Ctx, server: FanoutServer, messages: number) {
  const url = ctx.receivers.url(0, "/delay/1/hook");
  await ctx.receivers.reset();
  const bare = await runBaselineFanout([url], messages, 1, 1, 120_000);
  const bareRate = (await ctx.receivers.waitFor(messages, ctx.plan.stallMs)).rate;
  await ctx.receivers.reset();
  const { queueId } = await makeQueue(server, "fifo", []);
  await listener(server, queueId, "line", url, { ordering: "fifo" });
  await publish(ctx, server, queueId, messages);
  const arrivals = await ctx.receivers.waitFor(messages, ctx.plan.stallMs);
  log(`pace: FIFO ${Math.round(arrivals.rate ?? 0)}/s, one at a time bare ${Math.round(bareRate ?? 0)}/s (${bare.sent} sent)`);
  ctx.figures.push(figure({ section: "pace", name: "FIFO, receiver answering in 1 ms", unit: "deliveries/s", value: arrivals.complete ? arrivals.rate : null,
    baseline: bareRate, baselineName: "bare fetch, one request at a time", target: { kind: "ratio>=", value: 0.7 },
    note: arrivals.complete ? undefined : `${arrivals.count} of ${messages} arrived` }));
}

async function rateAccuracy(ctx: Ctx, server: FanoutServer) {
  await ctx.receivers.reset();
  const { queueId } = await makeQueue(server, "paced", []);
  await listener(server, queueId, "paced", ctx.receivers.url(1), { rate_limit: RATE });
  await publish(ctx, server, queueId, Math.ceil((RATE * RATE_WINDOW_MS * 1.5) / 1000));
  await ctx.receivers.track(true);
  // From the first arrival, the ten seconds after.
  const first = await untilPort(ctx, [1], 1);
  await Bun.sleep(RATE_WINDOW_MS + 500);
  const times = (await ctx.receivers.tracked()).map(([, t]) => t).filter((t) => first !== null && t >= first && t < first + RATE_WINDOW_MS);
  await ctx.receivers.track(false);
  const perSecond = times.length / (RATE_WINDOW_MS / 1000);
  log(`pace: rate limit ${RATE}/s, ${perSecond.toFixed(1)}/s over ${RATE_WINDOW_MS / 1000} s`);
  ctx.figures.push(figure({ section: "pace", name: `rate limit ${RATE}/s, off by`, unit: "%", value: (Math.abs(perSecond - RATE) / RATE) * 100,
    baseline: null, baselineName: "(absolute target)", target: { kind: "<", value: 5 }, note: `${perSecond.toFixed(1)} deliveries/s started over ${RATE_WINDOW_MS / 1000} s` }));
}

/** Deliveries a second to the 10 unordered listeners, from the first publish until each has every message. */
async function unordered(ctx: Ctx, server: FanoutServer, name: string, messages: number, extra: boolean): Promise<number | null> {
  await ctx.receivers.reset();
  const ports = Array.from({ length: 10 }, (_, i) => i + 2);
  const { queueId } = await makeQueue(server, name, ports.map((p) => ctx.receivers.url(p)));
  if (extra) {
    await listener(server, queueId, "line", ctx.receivers.url(12, "/delay/1/hook"), { ordering: "fifo" });
    await listener(server, queueId, "paced", ctx.receivers.url(13), { rate_limit: 50 });
  }
  const started = wallMs();
  await publish(ctx, server, queueId, messages);
  const done = await untilPort(ctx, ports, messages);
  return done === null ? null : (messages * ports.length) / ((done - started) / 1000);
}

export async function paceSection(ctx: Ctx): Promise<void> {
  const messages = ctx.plan.quick ? 1_000 : 5_000;
  const server = await startFanout({ binary: ctx.plan.binary, db: join(ctx.dir, "pace", "fanout.db"), ttlMs: ctx.plan.deadlineMs });
  try {
    await fifoThroughput(ctx, server, ctx.plan.quick ? 500 : 2_000);
    await rateAccuracy(ctx, server);
    // Alternated rounds: with the FIFO and rate-limited listeners, then without.
    const rounds: { mixed: number | null; plain: number | null }[] = [];
    for (let round = 0; round < (ctx.plan.quick ? 1 : 3); round++) {
      const mixed = await unordered(ctx, server, `mixed-${round}`, messages, true);
      const plain = await unordered(ctx, server, `plain-${round}`, messages, false);
      rounds.push({ mixed, plain });
      log(`pace: 10 unordered ${Math.round(mixed ?? 0)}/s beside a FIFO and a rate-limited listener, ${Math.round(plain ?? 0)}/s alone`);
    }
    const ratio = (r: (typeof rounds)[number]) => (r.mixed ?? 0) / (r.plain ?? Infinity);
    const m = [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor(rounds.length / 2)]!;
    ctx.figures.push(figure({ section: "pace", name: "fan-out to 10 beside a FIFO and a rate-limited listener", unit: "deliveries/s", value: m.mixed,
      baseline: m.plain, baselineName: "the same 10 listeners alone", target: { kind: "ratio>=", value: 0.9 },
      note: `rounds: ${rounds.map((r) => ratio(r).toFixed(2)).join(", ")}; the median round is shown` }));
  } finally {
    const { peakKb } = await server.stop();
    notePeak(ctx, "pace", peakKb);
  }
}
