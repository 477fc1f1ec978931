/**
 * Load generators: wrk for HTTP/1.1 (64 keep-alive connections; wrk offers no ALPN, so TLS lands on HTTP/1.1)
 * and h2load for HTTP/2 (a few connections, many concurrent streams each). Both are C programs, so the client
 * costs far less CPU than the server it measures; its CPU is still reported, because on 2 cores it competes.
 * Only 2xx answers count as published messages.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnChild } from "./procs.ts";
import { percentile } from "./stats.ts";

export type Load = {
  tool: "wrk" | "h2load";
  okPerSec: number; // 2xx answers per second of the measured period
  requests: number;
  failures: number; // non-2xx answers, socket errors, timeouts
  p50: number | null; // ms
  p99: number | null;
  clientCpu: number; // percent of one core used by the load generator
  raw?: string;
};

export type Target = { url: string; key: string; bodyFile: string };
export const WRK_THREADS = 2;

/** The Lua script wrk needs to POST a body with headers; written once per run directory. */
export function wrkScript(dir: string, t: Target): string {
  const path = join(dir, "post.lua");
  const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII
  writeFileSync(path, [
    `wrk.method = "POST"`,
    `local f = assert(io.open(${lua(t.bodyFile)}, "rb")); wrk.body = f:read("*a"); f:close()`,
    `wrk.headers["Content-Type"] = "application/json"`,
    `wrk.headers["X-API-KEY"] = ${lua(t.key)}`,
  ].join("\n"));
  return path;
}

async function finish(child: ReturnType<typeof spawnChild>, started: number): Promise<{ out: string; cpu: number }> {
  await child.proc.exited;
  const usage = child.proc.resourceUsage();
  const wallUs = (performance.now() - started) * 1000;
  const cpu = usage ? Math.round((Number(usage.cpuTime.total) / wallUs) * 1000) / 10 : 0;
  return { out: child.output(), cpu };
}

/** `stop` ends the run early: wrk stops on SIGINT and still prints its figures, for the time it ran. */
export async function runWrk(t: Target, script: string, connections: number, seconds: number, stop?: AbortSignal): Promise<Load> {
  const args = ["wrk", "-t", String(WRK_THREADS), "-c", String(connections), "-d", `${seconds}s`, "--timeout", "10s", "--latency", "-s", script, t.url];
  const started = performance.now();
  const child = spawnChild(args, { ttlMs: (seconds + 20) * 1000 });
  stop?.addEventListener("abort", () => child.proc.kill("SIGINT"));
  const { out, cpu } = await finish(child, started);
  if (child.proc.exitCode !== 0) throw new Error(`wrk failed (${child.proc.exitCode}):\n${out}`);
  return { ...parseWrk(out), clientCpu: cpu, raw: out };
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

export function parseWrk(out: string): Omit<Load, "clientCpu"> {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, "m").exec(out);
    return m ? Number(m[1]) * UNIT_MS[m[2]!]! : null;
  };
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!total) throw new Error(`wrk output not understood:\n${out}`);
  const requests = Number(total[1]);
  const seconds = (Number(total[2]) * UNIT_MS[total[3]!]!) / 1000;
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return { tool: "wrk", okPerSec: (requests - non2xx) / seconds, requests, failures: non2xx + socketErrors, p50: pct("50"), p99: pct("99") };
}

/** `h1`: HTTP/1.1 (`--h1`; `streams` is then the requests pipelined on a connection, so 1), as wrk speaks it. */
export type H2Run = { clients: number; streams: number; seconds?: number; warmup?: number; count?: number; logFile?: string; h1?: boolean };

/** Timed (`seconds` after `warmup`) or counted (`count` requests, used to publish a fixed number of messages). */
export async function runH2load(t: Target, r: H2Run): Promise<Load> {
  const args = ["h2load", "-t", "2", "-c", String(r.clients), "-m", String(r.streams), "-d", t.bodyFile,
    "-H", "content-type: application/json", "-H", `x-api-key: ${t.key}`];
  if (r.h1) args.push("--h1");
  if (r.count !== undefined) args.push("-n", String(r.count));
  else args.push("-D", `${Math.round((r.seconds ?? 1) * 1000)}ms`, `--warm-up-time=${Math.round((r.warmup ?? 1) * 1000)}ms`);
  if (r.logFile) args.push(`--log-file=${r.logFile}`);
  args.push(t.url);
  const started = performance.now();
  const child = spawnChild(args, { ttlMs: ((r.seconds ?? 60) + (r.warmup ?? 0) + 30) * 1000 });
  const { out, cpu } = await finish(child, started);
  const parsed = parseH2load(out);
  const latency = r.logFile ? logLatency(r.logFile) : { p50: null, p99: null };
  return { ...parsed, ...latency, clientCpu: cpu, raw: out };
}

export function parseH2load(out: string): Omit<Load, "clientCpu" | "p50" | "p99"> {
  const fin = /finished in ([\d.]+)(ms|s), ([\d.]+) req\/s/.exec(out);
  const req = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (!fin || !req || !codes) throw new Error(`h2load output not understood:\n${out}`);
  const done = Number(req[3]);
  const ok = Number(codes[1]);
  const okPerSec = done ? Number(fin[3]) * (ok / done) : 0; // h2load's req/s counts answered requests of the measured period
  return { tool: "h2load", okPerSec, requests: done, failures: Number(req[1]) - ok, p50: null, p99: null } as Omit<Load, "clientCpu" | "p50" | "p99">;
}

/** h2load prints no percentiles; its log has one line per request: start µs, status, duration µs. */
function logLatency(file: string): { p50: number | null; p99: number | null } {
  const ms: number[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [, status, us] = line.split("\t");
    if (status && status.startsWith("2")) ms.push(Number(us) / 1000);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}
