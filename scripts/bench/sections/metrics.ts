/**
 * Metrics: what scraping /metrics costs ingest. One fanout process (metrics are always collected), one queue;
 * each round measures ingest over HTTP/1.1 twice, back to back, once with nothing scraping and once with a
 * scraper fetching /metrics every second (as a Prometheus with a 1 s interval would, which is 15 times the
 * usual rate), the order alternating from round to round as in the ingest section. Each run has a listener of
 * its own, deleted after it, so every run starts alike. The figure is the median round's ratio, scraped to
 * unscraped; the note gives every round, the scrapes' median and worst time and the size of one answer.
 */
import { join } from "node:path";
import { log, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout, type FanoutServer } from "../fanout-server.ts";
import { measureIngest, median, roundsNote } from "./ingest.ts";
import type { Load } from "../loadgen.ts";
import { figure } from "../report.ts";
import { median as medianOf, percentile } from "../stats.ts";

const SCRAPE_EVERY_MS = 1_000;
const INSECURE = { tls: { rejectUnauthorized: false } } as const;

type Scrapes = { ms: number[]; bytes: number; failures: number };

/** Scrapes /metrics every second until stopped; returns each scrape's time. */
function startScraper(url: string): () => Promise<Scrapes> {
  const result: Scrapes = { ms: [], bytes: 0, failures: 0 };
  let running: Promise<void> = Promise.resolve();
  const scrapeOnce = async () => {
    const started = performance.now();
    try {
      const res = await fetch(`${url}/metrics`, INSECURE);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      result.ms.push(performance.now() - started);
      result.bytes = text.length;
    } catch (e) {
      result.failures++;
      if (result.failures === 1) log(`scrape failed: ${e}`);
    }
  };
  const timer = setInterval(() => (running = running.then(scrapeOnce)), SCRAPE_EVERY_MS);
  return async () => {
    clearInterval(timer);
    await running;
    return result;
  };
}

type Round = { baseline: Load; fanout: Load; ratio: number; scrapes: Scrapes };

async function run(ctx: Ctx, server: FanoutServer, queueId: string, name: string, scraped: boolean, meter: boolean) {
  const notify = ctx.receivers.url(0);
  const { listener } = await server.api("POST", `/queues/${queueId}/listeners`,
    { name, notify_url: notify, liveness_url: new URL("/health", notify).href });
  await ctx.receivers.reset();
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  const stop = scraped ? startScraper(server.url) : async () => ({ ms: [], bytes: 0, failures: 0 });
  const load = await measureIngest(ctx, scraped ? "scraped every second" : "not scraped", target, server.pid, "h1", ctx.plan.pairSeconds, meter);
  const scrapes = await stop();
  await server.api("DELETE", `/queues/${queueId}/listeners/${listener.id}`);
  return { load, scrapes };
}

export async function metricsSection(ctx: Ctx): Promise<void> {
  const server = await startFanout({ binary: ctx.plan.binary, db: join(ctx.dir, "metrics", "fanout.db"), ttlMs: ctx.plan.deadlineMs });
  const { queueId } = await makeQueue(server, "metrics", []);
  const rounds: Round[] = [];
  for (let round = 0; round < ctx.plan.ingestRounds; round++) {
    const meter = round === 0;
    const plain = () => run(ctx, server, queueId, `plain-${round}`, false, meter);
    const scraped = () => run(ctx, server, queueId, `scraped-${round}`, true, meter);
    const [b, f] = round % 2 === 0 ? [await plain(), await scraped()] : await scraped().then(async (f) => [await plain(), f]);
    rounds.push({ baseline: b.load, fanout: f.load, ratio: f.load.okPerSec / b.load.okPerSec, scrapes: f.scrapes });
    log(`metrics round ${round + 1}: ratio ${(f.load.okPerSec / b.load.okPerSec).toFixed(3)}, ${f.scrapes.ms.length} scrapes`);
  }
  const { exitCode, peakKb } = await server.stop();
  notePeak(ctx, "metrics", peakKb);
  if (exitCode !== 0) log(`fanout exited with ${exitCode} after the metrics runs`);
  rounds.sort((x, y) => x.ratio - y.ratio);
  const m = median(rounds);
  const all = rounds.flatMap((r) => r.scrapes.ms);
  const failures = rounds.reduce((n, r) => n + r.scrapes.failures + r.fanout.failures, 0);
  const notes = [roundsNote(rounds),
    `scrapes: ${all.length}, median ${medianOf(all)?.toFixed(1)} ms, worst ${percentile(all, 100)?.toFixed(1)} ms, ${(m.scrapes.bytes / 1024).toFixed(0)} KiB each`,
    failures > 0 ? `${failures} requests or scrapes failed` : undefined].filter(Boolean);
  ctx.figures.push(figure({ section: "metrics", name: "ingest HTTP/1.1, /metrics scraped every second", unit: "msg/s",
    value: m.fanout.okPerSec, baseline: m.baseline.okPerSec, baselineName: "same server, nothing scraping",
    target: { kind: "ratio>=", value: 0.97 }, note: notes.join("; ") }));
  ctx.figures.push(figure({ section: "metrics", name: "ingest HTTP/1.1 p99, /metrics scraped every second", unit: "ms",
    value: m.fanout.p99, baseline: m.baseline.p99, baselineName: "same server, nothing scraping" }));
  ctx.details.metrics = rounds;
}
