/**
 * The compiled fanout under test: started as `timeout <ttl> dist/fanout serve` on 127.0.0.1, port 0, with a file
 * database, a known owner key, 127.0.0.1/32 allowed as a delivery target and rate limiting off (the bench is one
 * key sending far above the default limit). Its URL is read from the `listening on <url>` line, readiness from
 * GET /healthz. Memory is sampled from the fanout process itself, not from `timeout`.
 */
import { join } from "node:path";
import { childPidOf, isOurs, spawnChild, stopProcess, trackPid, untrackPid, waitUntil, type Child } from "./procs.ts";
import { MemorySampler } from "./proc-stats.ts";
import { wallMs } from "./payload.ts";

export const BENCH_KEY = "bench-owner-key-0123456789";
const INSECURE = { tls: { rejectUnauthorized: false } } as const; // the self-signed certificate made at start

export type FanoutStart = { binary: string; db: string; env?: Record<string, string>; ttlMs: number };

export type FanoutServer = {
  url: string;
  pid: number;
  child: Child;
  readyMs: number; // spawn to the first 200 from /healthz
  readyAt: number; // wall ms of that 200 (payload.ts wallMs), to time what follows the start
  memory: MemorySampler;
  api(method: string, path: string, body?: unknown): Promise<any>;
  stop(): Promise<{ exitCode: number | null; peakKb: number }>;
};

export async function startFanout(opts: FanoutStart): Promise<FanoutServer> {
  const env = {
    FANOUT_HOST: "127.0.0.1", FANOUT_PORT: "0", FANOUT_DB: opts.db, FANOUT_BOOTSTRAP_KEY: BENCH_KEY,
    FANOUT_ALLOW_TARGETS: "127.0.0.1/32", FANOUT_RATE_LIMIT: "0", FANOUT_SHUTDOWN_TIMEOUT: "3s", ...opts.env,
  };
  const t0 = performance.now();
  const ttl = `${Math.ceil(opts.ttlMs / 1000)}s`;
  const child = spawnChild(["timeout", "-k", "5s", ttl, opts.binary, "serve"], { env, ttlMs: opts.ttlMs + 10_000 });
  const alive = () => (child.proc.exitCode !== null ? `fanout exited (${child.proc.exitCode}):\n${child.output().slice(-3000)}` : null);
  const url = (await child.waitForLine(/listening on (https?:\/\/\S+)/, 20_000))[1]!.replace("localhost", "127.0.0.1");
  await waitUntil(() => healthy(url), 20_000, alive, () => `fanout /healthz never answered 200:\n${child.output()}`, 2);
  const readyMs = performance.now() - t0;
  const readyAt = wallMs();
  const pid = await waitUntil(() => childPidOf(child.proc.pid), 2000, alive, () => "fanout pid not found under timeout");
  trackPid(pid);
  const memory = new MemorySampler(pid);
  return {
    url, pid, child, readyMs, readyAt, memory,
    api: (method, path, body) => api(url, method, path, body),
    async stop() {
      const peakKb = memory.stop();
      const exitCode = await stopProcess(child.proc, 6000);
      if (isOurs(pid)) process.kill(pid, "SIGKILL"); // `timeout` was killed before it could pass the signal on
      untrackPid(pid);
      return { exitCode, peakKb };
    },
  };
}

async function healthy(url: string): Promise<true | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, INSECURE);
    await res.arrayBuffer();
    return res.status === 200 ? true : undefined;
  } catch {
    return undefined; // not accepting connections yet
  }
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}/v1${path}`, {
    ...INSECURE,
    method,
    headers: { "x-api-key": BENCH_KEY, "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`fanout ${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** A queue with `urls.length` listeners; each listener's liveness URL is the same receiver's /health (or given). */
export async function makeQueue(server: FanoutServer, name: string, urls: string[], liveness?: (i: number) => string) {
  const { queue } = await server.api("POST", "/queues", { name });
  const listeners: string[] = [];
  for (const [i, notify] of urls.entries()) {
    const live = liveness?.(i) ?? new URL("/health", notify).href;
    const { listener } = await server.api("POST", `/queues/${queue.id}/listeners`, { name: `l${i}`, notify_url: notify, liveness_url: live });
    listeners.push(listener.id);
  }
  return { queueId: queue.id as string, listenerIds: listeners };
}

export const dbIn = (dir: string, name = "fanout.db") => join(dir, name);
