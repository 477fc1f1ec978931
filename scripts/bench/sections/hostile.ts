/**
 * Hostile: ordinary publishing (HTTP/1.1, wrk, as the ingest section measures it) alone, and then while hostile
 * clients (hostile-clients.ts, a process of their own) send at the same time: one 120 KB body of objects nested
 * 20,000 deep to POST /v1/queues; forty bodies of arrays nested 20,000 deep (40 KB each) at once, half to
 * POST /v1/queues and half to the publish route; and publishes of "aaa…a!" to a queue whose schema has a
 * backtracking-prone pattern, short (what a backtracking engine takes half a second over) and 40,000 long. A key holder of one organization must not slow another's publishing: the figures
 * are the publish throughput, the server's CPU and its peak RSS beside hostile clients, each as a ratio to the
 * same round's run alone.
 *
 * The pattern is `^(a+)+$` when fanout accepts it; when fanout refuses it (422), the run records that and takes
 * the worst pattern of the list fanout still accepts. Each run has a server of its own, so its peak RSS is that
 * run's; the two runs of a round go back to back, their order alternating (see ingest.ts), and the round with the
 * median throughput ratio is reported.
 */
import { join } from "node:path";
import { mkdirSync, writeFileSync } from "node:fs";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout, type FanoutServer } from "../fanout-server.ts";
import { runWrk, wrkScript, type Load } from "../loadgen.ts";
import { BUN, spawnChild } from "../procs.ts";
import { figure, mb } from "../report.ts";
import type { HostilePlan, HostileResult } from "../hostile-clients.ts";
import { median } from "./ingest.ts";

/** Worst first, each with the length of "a…a!" that takes this machine about half a second to refuse. */
const PATTERNS: [string, number][] = [
  ["^(a+)+$", 24], ["^(a|a)+$", 23], ["^(a*)*$", 23], ["^(a+)*$", 24], ["^([a-z]+)+$", 23], ["^(\\w+\\s?)+$", 24],
  ["^(a|aa)+$", 34], ["^(.*a){10}$", 48], ["^a*a*a*a*a*a*$", 55], ["^a*a*a*$", 1000], ["^a+$", 10_000],
];

type Hostile = { clients: HostileResult; cpu: number };
type Run = { load: Load; cpu: number; peakKb: number; hostile?: Hostile };
type Round = { alone: Run; hostile: Run; ratio: number };
type Pattern = { pattern: string; length: number; refused: string[] };

/** A queue with the worst pattern fanout accepts; the refused ones are kept for the report. */
async function regexQueue(server: FanoutServer): Promise<{ queueId: string } & Pattern> {
  const refused: string[] = [];
  for (const [pattern, length] of PATTERNS) {
    try {
      const { queue } = await server.api("POST", "/queues", { name: `regex-${refused.length}`, schema: { s: { type: "string", pattern } } });
      return { queueId: queue.id, pattern, length, refused };
    } catch (error) {
      if (!String(error).includes(": 422 ")) throw error;
      refused.push(pattern);
    }
  }
  throw new Error("fanout refused every pattern, even ^a+$");
}

function writeBodies(dir: string, length: number) {
  const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
  return {
    objects: file("deep-objects.json", '{"a":'.repeat(20_000) + "1" + "}".repeat(20_000)), // 120 KB
    arrays: file("deep-arrays.json", "[".repeat(20_000) + "]".repeat(20_000)), // 40 KB
    regex: file("regex.json", JSON.stringify({ data: { s: `${"a".repeat(length)}!` } })),
    // What a linear engine is given most: as long a string as fanout checks against a pattern in one message.
    regexLong: file("regex-long.json", JSON.stringify({ data: { s: `${"a".repeat(40_000)}!` } })),
  };
}

/** One run on a fresh server: warm-up, then `seconds` of wrk, with the hostile clients beside it when asked. */
async function run(ctx: Ctx, label: string, hostile: boolean): Promise<Run & Pattern> {
  const dir = join(ctx.dir, `hostile-${label}`);
  mkdirSync(dir, { recursive: true });
  const server = await startFanout({ binary: ctx.plan.binary, db: join(dir, "fanout.db"), ttlMs: ctx.plan.deadlineMs });
  try {
    const notify = ctx.receivers.url(0);
    const { queueId } = await makeQueue(server, "publish", [notify]);
    const regex = await regexQueue(server);
    const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
    const script = wrkScript(ctx.dir, target);
    await runWrk(target, script, ctx.plan.wrkConnections, Math.max(1, Math.round(ctx.plan.warmupSeconds)));
    const seconds = ctx.plan.pairSeconds;
    const clients = hostile ? startHostile(ctx, dir, server.url, queueId, regex, seconds) : null;
    const done = meterCpu(ctx, `publish ${label}`, server.pid);
    const load = await runWrk(target, script, ctx.plan.wrkConnections, seconds);
    const cpu = done(load.clientCpu).server?.percent ?? 0;
    const result = clients ? await clients : undefined;
    log(`hostile ${label}: ${Math.round(load.okPerSec)} msg/s, p99 ${load.p99?.toFixed(1)} ms, server CPU ${cpu} %${result ? `, hostile clients' CPU ${result.cpu} %, their answers ${JSON.stringify(result.clients)}` : ""}`);
    const { peakKb } = await server.stop();
    // The whole run's peak RSS figure is of ordinary load; the peak beside hostile clients has a figure of its own.
    if (!hostile) notePeak(ctx, `hostile section, ${label}`, peakKb);
    return { load, cpu, peakKb, hostile: result, pattern: regex.pattern, length: regex.length, refused: regex.refused };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

function startHostile(ctx: Ctx, dir: string, url: string, publishQueue: string, regex: { queueId: string; length: number }, seconds: number): Promise<Hostile> {
  const bodies = writeBodies(dir, regex.length);
  const publish = `/v1/queues/${publishQueue}/messages`;
  const plan: HostilePlan = { url, key: BENCH_KEY, seconds, requests: [
    { name: "objects 20,000 deep → POST /v1/queues", method: "POST", path: "/v1/queues", bodyFile: bodies.objects, clients: 1 },
    { name: "arrays 20,000 deep → POST /v1/queues", method: "POST", path: "/v1/queues", bodyFile: bodies.arrays, clients: 20 },
    { name: "arrays 20,000 deep → publish", method: "POST", path: publish, bodyFile: bodies.arrays, clients: 20 },
    { name: "a…a! → pattern queue", method: "POST", path: `/v1/queues/${regex.queueId}/messages`, bodyFile: bodies.regex, clients: 2 },
    { name: "40,000 a's and ! → pattern queue", method: "POST", path: `/v1/queues/${regex.queueId}/messages`, bodyFile: bodies.regexLong, clients: 2 },
  ] };
  const planFile = join(dir, "hostile-plan.json");
  writeFileSync(planFile, JSON.stringify(plan));
  const ttl = (seconds + 60) * 1000;
  const child = spawnChild([BUN, join(import.meta.dir, "..", "hostile-clients.ts"), "--plan", planFile, "--ttl", String(ttl)], { ttlMs: ttl });
  const started = performance.now();
  // A client waits for the answer it is owed, up to 5 s past the window: a server that holds it shows as "no answer".
  return child.waitForLine(/hostile (\{.*\})\n/, ttl).then(async (m) => {
    await child.proc.exited;
    // On two cores the hostile clients' own CPU is taken from the server too: it is reported beside the figures.
    const cpu = Number(child.proc.resourceUsage()?.cpuTime.total ?? 0) / 1000 / (performance.now() - started) * 100;
    return { clients: JSON.parse(m[1]!), cpu: Math.round(cpu) };
  });
}

export async function hostileSection(ctx: Ctx): Promise<void> {
  const rounds: Round[] = [];
  let pattern: Pattern | undefined;
  for (let i = 0; i < ctx.plan.pairRounds; i++) {
    const alone = () => run(ctx, `alone ${i + 1}`, false);
    const beside = () => run(ctx, `beside hostile clients ${i + 1}`, true);
    let a: Run & Pattern;
    let h: Run & Pattern;
    if (i % 2 === 0) {
      a = await alone();
      h = await beside();
    } else {
      h = await beside();
      a = await alone();
    }
    pattern = h;
    rounds.push({ alone: a, hostile: h, ratio: h.load.okPerSec / a.load.okPerSec });
  }
  rounds.sort((x, y) => x.ratio - y.ratio);
  const m = median(rounds);
  const baselineName = "the same round, publishing alone";
  const refused = pattern!.refused.length ? `fanout refused ${pattern!.refused.join(", ")} (422); ` : "";
  const answers = Object.entries(m.hostile.hostile?.clients ?? {}).map(([name, r]) => `${name}: ${JSON.stringify(r.answers)}, slowest ${r.slowestMs} ms`).join("; ");
  ctx.figures.push(figure({ section: "hostile", name: "publish HTTP/1.1 beside hostile clients", unit: "msg/s", value: m.hostile.load.okPerSec,
    baseline: m.alone.load.okPerSec, baselineName,
    note: `rounds: ${rounds.map((r) => r.ratio.toFixed(2)).join(", ")}; publishes failed or timed out: ${m.hostile.load.failures} beside, ${m.alone.load.failures} alone; the hostile clients' process used ${m.hostile.hostile?.cpu} % of a core; ${refused}pattern ${pattern!.pattern} with ${pattern!.length} a's; hostile answers: ${answers}` }));
  ctx.figures.push(figure({ section: "hostile", name: "publish p99 beside hostile clients", unit: "ms", value: m.hostile.load.p99, baseline: m.alone.load.p99, baselineName }));
  ctx.figures.push(figure({ section: "hostile", name: "server CPU beside hostile clients", unit: "%", value: m.hostile.cpu, baseline: m.alone.cpu, baselineName }));
  ctx.figures.push(figure({ section: "hostile", name: "server peak RSS beside hostile clients", unit: "MB", value: mb(m.hostile.peakKb), baseline: mb(m.alone.peakKb), baselineName }));
  ctx.details.hostile = { rounds, pattern };
}
