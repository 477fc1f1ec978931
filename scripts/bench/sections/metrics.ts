/**
 * Metrics: what scraping /metrics costs ingest. One fanout process (metrics are always collected), one queue with
 * one listener, and one continuous HTTP/1.1 load (wrk, as in the ingest section). While it runs, time is cut into
 * short windows in pairs: in one window of each pair a scraper fetches /metrics every second (as a Prometheus with
 * a 1 s interval would, 15 times the usual rate), in the other nothing scrapes, the order alternating from pair to
 * pair. Each window's ingest is the messages committed in it, read from the database (the seqs given out) at its
 * edges.
 *
 * Why windows, not runs: the effect measured is a few per cent, while this machine's speed drifts by 20-30 % within
 * minutes and separate 5-s runs spread by ±10 %; windows seconds apart within one load share the drift. The figure
 * is all scraped windows' ingest against all unscraped ones' (the windows are of one length); the note gives the
 * spread of the pairs' ratios, the scrapes' median and worst time and the size of one answer.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { log, meterCpu, notePeak, type Ctx } from "../context.ts";
import { BENCH_KEY, makeQueue, startFanout } from "../fanout-server.ts";
import { runWrk, wrkScript } from "../loadgen.ts";
import { figure } from "../report.ts";
import { median as medianOf, percentile } from "../stats.ts";

const SCRAPE_EVERY_MS = 1_000;
const INSECURE = { tls: { rejectUnauthorized: false } } as const;

type Scrapes = { ms: number[]; bytes: number; failures: number };

/**
 * Scrapes /metrics at once and then every second of a window of `windowMs`, adding each scrape's time to `into`;
 * the returned promise ends when the last scrape has. The scrapes are timed from the window's start, so none
 * strays into the next window.
 */
function scrapeDuring(url: string, windowMs: number, into: Scrapes): Promise<void> {
  const scrapeOnce = async () => {
    const started = performance.now();
    try {
      const res = await fetch(`${url}/metrics`, INSECURE);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      into.ms.push(performance.now() - started);
      into.bytes = text.length;
    } catch (e) {
      into.failures++;
      if (into.failures === 1) log(`scrape failed: ${e}`);
    }
  };
  const scrapes: Promise<void>[] = [];
  for (let at = 0; at < windowMs; at += SCRAPE_EVERY_MS) scrapes.push(Bun.sleep(at).then(scrapeOnce));
  return Promise.all(scrapes).then(() => {});
}

type Window = { scraped: boolean; perSec: number };

/** Messages committed so far (seqs only grow, and nothing is deleted during the section), and the close. */
function committedCounter(path: string): { count(): number; close(): void } {
  const db = new Database(path, { readonly: true });
  const query = db.query<{ n: number | null }, []>("SELECT max(seq) AS n FROM messages");
  return { count: () => query.get()?.n ?? 0, close: () => db.close() };
}

export async function metricsSection(ctx: Ctx): Promise<void> {
  const p = ctx.plan;
  const dbPath = join(ctx.dir, "metrics", "fanout.db");
  const server = await startFanout({ binary: p.binary, db: dbPath, ttlMs: p.deadlineMs });
  const notify = ctx.receivers.url(0);
  const { queueId } = await makeQueue(server, "metrics", [notify]);
  const target = { url: `${server.url}/v1/queues/${queueId}/messages`, key: BENCH_KEY, bodyFile: ctx.bodyFile };
  // Pairs' ratios spread by about ±10 % (with nothing scraped in either window too), against a target 3 % below
  // parity: 40 pairs (the full plan) halve the spread of their mean against 10. Windows of 2 s (0.8 s quick).
  const pairs = p.ingestRounds * 8;
  const windowMs = p.pairSeconds * 400;
  const loadSeconds = Math.ceil(p.warmupSeconds + (pairs * 2 * windowMs) / 1000 + 2);
  const committed = committedCounter(dbPath);
  const scrapes: Scrapes = { ms: [], bytes: 0, failures: 0 };
  const windows: Window[] = [];

  const load = runWrk(target, wrkScript(ctx.dir, target), p.wrkConnections, loadSeconds);
  await Bun.sleep(p.warmupSeconds * 1000);
  const done = meterCpu(ctx, "metrics, scraped half the time", server.pid);
  for (let pair = 0; pair < pairs; pair++) {
    for (const scraped of pair % 2 === 0 ? [false, true] : [true, false]) {
      const [n0, t0] = [committed.count(), performance.now()];
      const scraping = scraped ? scrapeDuring(server.url, windowMs, scrapes) : Promise.resolve();
      await Bun.sleep(windowMs);
      const [n1, t1] = [committed.count(), performance.now()];
      await scraping;
      windows.push({ scraped, perSec: ((n1 - n0) * 1000) / (t1 - t0) });
    }
  }
  committed.close();
  const { raw, ...wrk } = await load;
  done(wrk.clientCpu);
  const { exitCode, peakKb } = await server.stop();
  notePeak(ctx, "metrics", peakKb);
  if (exitCode !== 0) log(`fanout exited with ${exitCode} after the metrics runs`);

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const on = mean(windows.filter((w) => w.scraped).map((w) => w.perSec));
  const off = mean(windows.filter((w) => !w.scraped).map((w) => w.perSec));
  const pairRatios = Array.from({ length: pairs }, (_, i) => {
    const [a, b] = [windows[2 * i]!, windows[2 * i + 1]!];
    return (a.scraped ? a.perSec : b.perSec) / (a.scraped ? b.perSec : a.perSec);
  }).sort((x, y) => x - y);
  log(`metrics: ${windows.length} windows of ${windowMs} ms, ratio ${(on / off).toFixed(3)}, ${scrapes.ms.length} scrapes`);
  const failures = scrapes.failures + wrk.failures;
  const notes = [
    `${pairs} pairs of ${windowMs / 1000}-s windows within one load; pair ratios ${pairRatios[0]!.toFixed(2)}-${pairRatios.at(-1)!.toFixed(2)}, quartiles ${percentile(pairRatios, 25)!.toFixed(2)}/${percentile(pairRatios, 50)!.toFixed(2)}/${percentile(pairRatios, 75)!.toFixed(2)}`,
    `scrapes: ${scrapes.ms.length}, median ${medianOf(scrapes.ms)?.toFixed(1)} ms, worst ${percentile(scrapes.ms, 100)?.toFixed(1)} ms, ${(scrapes.bytes / 1024).toFixed(0)} KiB each`,
    failures > 0 ? `${failures} requests or scrapes failed` : undefined].filter(Boolean);
  ctx.figures.push(figure({ section: "metrics", name: "ingest HTTP/1.1, /metrics scraped every second", unit: "msg/s",
    value: on, baseline: off, baselineName: "same load, windows with nothing scraping",
    target: { kind: "ratio>=", value: 0.97 }, note: notes.join("; ") }));
  ctx.details.metrics = { windows, scrapes: scrapes.ms, wrk };
}
