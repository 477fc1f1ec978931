/** Starting the two baseline processes (baseline-ingest.ts, baseline-fanout.ts) from the bench. */
import { join } from "node:path";
import { BUN, spawnChild, waitUntil, type Child } from "./procs.ts";
import { MemorySampler } from "./proc-stats.ts";

export type BaselineIngest = { url: string; pid: number; child: Child; memory: MemorySampler; readyMs: number; stop(): Promise<number> };

/** A PostgreSQL URL as `db` starts the PostgreSQL baseline (baseline-ingest-postgres.ts), which has no `sync`. */
export async function startBaselineIngest(db: string, sync: "normal" | "full", ttlMs: number): Promise<BaselineIngest> {
  const t0 = performance.now();
  const command = db.startsWith("postgres")
    ? [BUN, join(import.meta.dir, "baseline-ingest-postgres.ts"), "--db", db, "--ttl", String(ttlMs)]
    : [BUN, join(import.meta.dir, "baseline-ingest.ts"), "--db", db, "--sync", sync, "--ttl", String(ttlMs)];
  const child = spawnChild(command, { ttlMs });
  const url = (await child.waitForLine(/listening on (\S+)/, 20_000))[1]!;
  await waitUntil(async () => {
    try {
      const res = await fetch(`${url}/healthz`, { tls: { rejectUnauthorized: false } });
      await res.arrayBuffer();
      return res.ok || undefined;
    } catch {
      return undefined; // not listening yet
    }
  }, 10_000, () => (child.proc.exitCode !== null ? child.output() : null), () => "baseline /healthz never answered", 2);
  const readyMs = performance.now() - t0;
  const memory = new MemorySampler(child.proc.pid);
  return {
    url, pid: child.proc.pid, child, memory, readyMs,
    async stop() {
      const peak = memory.stop();
      await child.stop(3000);
      return peak;
    },
  };
}

/** Runs the bare-fetch baseline to completion: `per` POSTs to each URL under the given caps. */
export async function runBaselineFanout(urls: string[], per: number, global: number, perListener: number, ttlMs: number) {
  const child = spawnChild([BUN, join(import.meta.dir, "baseline-fanout.ts"), "--urls", urls.join(","), "--per", String(per),
    "--global", String(global), "--per-listener", String(perListener), "--ttl", String(ttlMs)], { ttlMs });
  const line = await child.waitForLine(/done (\{.*\})/, ttlMs);
  await child.proc.exited;
  const usage = child.proc.resourceUsage();
  const result = JSON.parse(line[1]!) as { sent: number; failures: number; seconds: number };
  const cpu = usage ? Math.round((Number(usage.cpuTime.total) / (result.seconds * 1e6)) * 1000) / 10 : undefined;
  return { ...result, cpu, pid: child.proc.pid };
}
