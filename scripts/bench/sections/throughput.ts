/**
 * Throughput: how many messages a second fanout takes in and delivers, and what each costs its threads, over
 * HTTP/1.1 without TLS with 1 KiB messages (throughput-runs.ts has each run).
 *  - sustained publish-and-deliver, 1 and 10 listeners: the highest fixed publish rate that passes (every
 *    delivery arrives, p99 publish → received under 1 s, under a second of traffic behind when publishing ends),
 *    found by a bounded search (rate-search.ts) from the end-to-end rate
 *  - end to end: N publishes × 10 (and 1) listeners, deliveries a second from the first publish to the last arrival
 *  - ingest with 10 (and 1) listeners
 *  - CPU per message over the N × 10 run: the API thread's per publish, the delivery worker's per delivery
 *  - peak RSS of the section's runs
 * With --compare, every run is made on both binaries, one after the other with the order alternating (round by
 * round, step by step), and each figure of the current binary is given beside the compared one's, as a ratio.
 * The rounds' figure is the round with the median ratio (or, alone, the median value); the note lists them all.
 */
import { log, type Ctx } from "../context.ts";
import { RateSearch } from "../rate-search.ts";
import { figure, mb, type Figure, type Target, type Unit } from "../report.ts";
import { median } from "../stats.ts";
import { wrkWarmup } from "./ingest.ts";
import { endToEndRun, ingestRun, MAX_P99_MS, stepRun, type Bin, type EndToEnd, type Ingest } from "../throughput-runs.ts";

type Round = { ingest1: Ingest; ingest10: Ingest; e2e1: EndToEnd; e2e10: EndToEnd };
type Results = { bin: Bin; rounds: Round[]; searches: Record<1 | 10, RateSearch | null> };

const LISTENER_COUNTS = [1, 10] as const;
const SECTION = "throughput";

/** Each kind of run for every binary before the next kind, the binaries' order swapped every round. */
async function measureRounds(ctx: Ctx, results: Results[]): Promise<void> {
  for (let r = 0; r < ctx.plan.throughput.rounds; r++) {
    const order = r % 2 === 0 ? results : [...results].reverse();
    const round = new Map<Results, Partial<Round>>(order.map((x) => [x, {}]));
    const meter = r === 0; // the CPU table gets the first round only
    for (const x of order) round.get(x)!.ingest1 = await ingestRun(ctx, x.bin, 1, meter);
    for (const x of order) round.get(x)!.ingest10 = await ingestRun(ctx, x.bin, 10, meter);
    for (const x of order) round.get(x)!.e2e1 = await endToEndRun(ctx, x.bin, 1, meter);
    for (const x of order) round.get(x)!.e2e10 = await endToEndRun(ctx, x.bin, 10, meter);
    for (const x of order) {
      const done = round.get(x) as Round;
      x.rounds.push(done);
      log(`throughput ${x.bin.name} round ${r + 1}: end to end ${rate(done.e2e10.rate)} deliveries/s (10), ${rate(done.e2e1.rate)} (1); ` +
        `API ${apiUs(done.e2e10)?.toFixed(1)} µs/publish, worker ${workerUs(done.e2e10)?.toFixed(1)} µs/delivery`);
    }
  }
}

const rate = (x: number | null | undefined) => (x == null ? "—" : Math.round(x).toLocaleString("en-US"));
const apiUs = (e: EndToEnd) => (e.published > 0 ? (e.cpu.mainSeconds * 1e6) / e.published : null);
const workerUs = (e: EndToEnd) => (e.delivered > 0 ? (e.cpu.workerSeconds * 1e6) / e.delivered : null);
const processUs = (e: EndToEnd) => (e.delivered > 0 ? (e.cpu.totalSeconds * 1e6) / e.delivered : null);
const kernelUs = (seconds: number, count: number) => `of which ${count > 0 ? ((seconds * 1e6) / count).toFixed(1) : "—"} µs in the kernel`;

/** Each listener count's search starts from that binary's median end-to-end rate, in messages a second. */
async function searchRates(ctx: Ctx, results: Results[]): Promise<void> {
  for (const listeners of LISTENER_COUNTS) {
    for (const x of results) {
      const e2e = median(x.rounds.flatMap((r) => (listeners === 1 ? r.e2e1 : r.e2e10).rate ?? []));
      x.searches[listeners] = e2e === null ? null : new RateSearch(e2e / listeners, ctx.plan.throughput.steps);
    }
    for (let step = 0; ; step++) {
      const order = step % 2 === 0 ? results : [...results].reverse();
      const due = order.filter((x) => x.searches[listeners]?.next != null);
      if (due.length === 0) break;
      for (const x of due) {
        const search = x.searches[listeners]!;
        const s = await stepRun(ctx, x.bin, listeners, search.next!);
        search.record(s);
        log(`throughput ${x.bin.name} ${listeners} listener(s) at ${rate(s.rate)}/s: ${s.pass ? "pass" : `FAIL (${s.reasons.join("; ")})`}, ` +
          `p50 ${s.timing.p50?.toFixed(1)} ms, p99 ${s.timing.p99?.toFixed(1)} ms, behind ${s.backlog} at the end, ${s.delivered}/${s.expected}`);
      }
    }
  }
}

export async function throughputSection(ctx: Ctx): Promise<void> {
  const started = performance.now();
  const bins: Bin[] = [{ name: "current", path: ctx.plan.binary }];
  if (ctx.plan.compare) bins.push({ name: "compared", path: ctx.plan.compare });
  const results: Results[] = bins.map((bin) => ({ bin, rounds: [], searches: { 1: null, 10: null } }));
  await measureRounds(ctx, results);
  await searchRates(ctx, results);
  const seconds = (performance.now() - started) / 1000;
  log(`throughput: ${seconds.toFixed(0)} s for ${bins.length} binar${bins.length > 1 ? "ies" : "y"}`);
  const [current, compared] = results;
  ctx.figures.push(...figures(ctx, current!, compared));
  ctx.details.throughput = { seconds, results: results.map(({ bin, rounds, searches }) => ({ bin, rounds,
    searches: Object.fromEntries(LISTENER_COUNTS.map((n) => [n, searches[n] && { estimate: searches[n]!.estimate, tried: searches[n]!.tried }])) })) };
}

type Spec = {
  name: string; unit: Unit; pick: (r: Round) => number | null; ratioTarget?: number; target?: Target; note: string;
  detail?: (r: Round) => string; // about the round shown, for the current binary
};

/** Index of the median of the known values (ties and gaps aside), 0 when none is known. */
function medianIndex(values: (number | null)[]): number {
  const known = values.flatMap((v, i) => (v === null ? [] : [{ v, i }])).sort((a, b) => a.v - b.v);
  return known.length ? known[Math.floor(known.length / 2)]!.i : 0;
}

const show = (x: number | null, unit: Unit) => (x === null ? "—" : unit === "µs" ? x.toFixed(1) : rate(x));

function roundsFigure(cur: Results, cmp: Results | undefined, s: Spec): Figure {
  const a = cur.rounds.map(s.pick);
  const b = cmp?.rounds.map(s.pick);
  const ratios = b ? a.map((v, i) => (v !== null && b[i] != null && b[i]! > 0 ? v / b[i]! : null)) : null;
  const i = medianIndex(ratios ?? a);
  const rounds = ratios ? `ratios by round ${ratios.map((r) => r?.toFixed(2) ?? "—").join(", ")}` : `rounds ${a.map((v) => show(v, s.unit)).join(", ")}`;
  const target = cmp && s.ratioTarget !== undefined ? { kind: "ratio>=" as const, value: s.ratioTarget } : s.target;
  return figure({ section: SECTION, name: s.name, unit: s.unit, value: a[i] ?? null, baseline: b?.[i] ?? null,
    baselineName: cmp ? "the --compare binary, same rounds" : "(no --compare)", target,
    note: [s.note, cur.rounds[i] && s.detail?.(cur.rounds[i]!), rounds].filter(Boolean).join("; ") });
}

function stepsText(search: RateSearch | null): string {
  if (!search) return "no estimate to start from";
  const steps = search.tried.map((t) => `${rate(t.rate)} ${t.pass ? `pass (p99 ${t.timing.p99?.toFixed(0)} ms)` : `fail (${t.reasons.join("; ")})`}`);
  return `${steps.join(", ")}${search.capped ? " (no faster step failed: the figure is a floor)" : ""}`;
}

function sustainedFigure(ctx: Ctx, listeners: 1 | 10, cur: Results, cmp: Results | undefined): Figure {
  const a = cur.searches[listeners];
  const b = cmp?.searches[listeners];
  const value = a?.best?.rate ?? null;
  const deliveries = value === null ? "" : `${rate(value * listeners)} deliveries/s; `;
  const note = `${deliveries}wrk at a fixed rate, 128 connections, ${ctx.plan.throughput.stepSeconds} s a step; a step passes when every ` +
    `delivery arrives, p99 publish → received < ${MAX_P99_MS} ms and under 1 s of traffic is behind when publishing ends; ` +
    `steps: ${stepsText(a)}${cmp ? `; compared: ${stepsText(b ?? null)}` : ""}`;
  return figure({ section: SECTION, name: `sustained publish-and-deliver, ${listeners} listener${listeners > 1 ? "s" : ""}`, unit: "msg/s",
    value, baseline: b?.best?.rate ?? null, baselineName: cmp ? "the --compare binary, same steps alternated" : "(no --compare)", note });
}

/** The largest peak RSS of a binary's runs in this section, and by which kind of run. */
function peakFigure(cur: Results, cmp: Results | undefined): Figure {
  const peaks = (x: Results) => {
    const kinds: Record<string, number> = {};
    const note = (kind: string, kb: number) => (kinds[kind] = Math.max(kinds[kind] ?? 0, kb));
    for (const r of x.rounds) {
      for (const [kind, run] of [["ingest 1", r.ingest1], ["ingest 10", r.ingest10], ["end to end 1", r.e2e1], ["end to end 10", r.e2e10]] as const) {
        note(kind, run.peakKb);
      }
    }
    for (const n of LISTENER_COUNTS) for (const s of x.searches[n]?.tried ?? []) note(`sustained ${n}`, s.peakKb);
    return { max: Math.max(0, ...Object.values(kinds)), kinds };
  };
  const a = peaks(cur);
  const b = cmp && peaks(cmp);
  const byKind = Object.entries(a.kinds).map(([k, kb]) => `${k} ${mb(kb)!.toFixed(0)} MB`).join(", ");
  return figure({ section: SECTION, name: "peak RSS of the throughput runs", unit: "MB", value: mb(a.max), baseline: b ? mb(b.max) : null,
    baselineName: cmp ? "the --compare binary" : "(no --compare)", note: `by run: ${byKind}` });
}

function figures(ctx: Ctx, cur: Results, cmp: Results | undefined): Figure[] {
  const n = ctx.plan.throughput.endToEndMessages;
  const count = n.toLocaleString("en-US");
  const tick = (published: number) => (published > 0 ? `one 10 ms tick is ${(1e4 / published).toFixed(2)} µs` : "");
  const e2eNote = (l: number) => `${count} publishes (h2load --h1, 64 connections, as fast as it can) until the receivers had all ` +
    `${(n * l).toLocaleString("en-US")}, after a warm-up of ${(n / 20).toLocaleString("en-US")} all delivered`;
  const ingestNote = `wrk, 64 connections, ${wrkWarmup(ctx)} s warm-up then ${ctx.plan.throughput.ingestSeconds} s`;
  const threads = `threads' CPU from /proc over the ${count} × 10 run`;
  return [
    sustainedFigure(ctx, 1, cur, cmp),
    sustainedFigure(ctx, 10, cur, cmp),
    roundsFigure(cur, cmp, { name: `end to end, ${count} × 10 listeners`, unit: "deliveries/s", pick: (r) => r.e2e10.rate, ratioTarget: 1.3, note: e2eNote(10) }),
    roundsFigure(cur, cmp, { name: `end to end, ${count} × 1 listener`, unit: "deliveries/s", pick: (r) => r.e2e1.rate, note: e2eNote(1) }),
    roundsFigure(cur, cmp, { name: "ingest HTTP/1.1 no TLS, 10 listeners", unit: "msg/s", pick: (r) => r.ingest10.load.okPerSec, ratioTarget: 1.2, note: ingestNote }),
    roundsFigure(cur, cmp, { name: "ingest HTTP/1.1 no TLS, 1 listener", unit: "msg/s", pick: (r) => r.ingest1.load.okPerSec, ratioTarget: 1.0, note: ingestNote }),
    roundsFigure(cur, cmp, { name: "API thread CPU per publish", unit: "µs", pick: (r) => apiUs(r.e2e10), target: { kind: "<=", value: 24 },
      note: `${threads}: the main thread's ÷ publishes; ${tick(n)}`, detail: (r) => kernelUs(r.e2e10.cpu.mainSystemSeconds, r.e2e10.published) }),
    roundsFigure(cur, cmp, { name: "delivery worker CPU per delivery", unit: "µs", pick: (r) => workerUs(r.e2e10), target: { kind: "<=", value: 22 },
      note: `${threads}: the busiest thread named Worker ÷ deliveries; ${tick(n * 10)}`,
      detail: (r) => kernelUs(r.e2e10.cpu.workerSystemSeconds, r.e2e10.delivered) }),
    roundsFigure(cur, cmp, { name: "process CPU per delivery, all threads", unit: "µs", pick: (r) => processUs(r.e2e10),
      note: `${threads}, the whole process ÷ deliveries (API, worker, checkpoint, JIT and GC threads)` }),
    peakFigure(cur, cmp),
  ];
}
