/**
 * Hostile clients, run as their own process beside wrk (sections/hostile.ts): each client sends its request, waits
 * for the answer and sends it again until the time is up. A plan names the requests, each with how many clients
 * send it at once. At the end it prints one line `hostile {…}` with the answers by status per request, and the
 * slowest answer.
 *
 * usage: bun hostile-clients.ts --plan <json file> --ttl <ms>
 * plan: { url, key, seconds, requests: [{ name, method, path, bodyFile, clients }] }
 */
import { readFileSync } from "node:fs";
import { argMap, exitWithParent } from "./child-life.ts";

export type HostileRequest = { name: string; method: string; path: string; bodyFile: string; clients: number };
export type HostilePlan = { url: string; key: string; seconds: number; requests: HostileRequest[] };
export type HostileResult = Record<string, { answers: Record<string, number>; slowestMs: number }>;

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 120_000));
const plan: HostilePlan = JSON.parse(readFileSync(args.get("plan")!, "utf8"));
const end = performance.now() + plan.seconds * 1000;
const result: HostileResult = {};

async function client(r: HostileRequest, body: string): Promise<void> {
  const tally = (result[r.name] ??= { answers: {}, slowestMs: 0 });
  while (performance.now() < end) {
    const t0 = performance.now();
    let outcome: string;
    try {
      const res = await fetch(`${plan.url}${r.path}`, {
        method: r.method,
        headers: { "x-api-key": plan.key, "content-type": "application/json" },
        body,
        tls: { rejectUnauthorized: false },
        signal: AbortSignal.timeout(Math.max(1000, end - performance.now() + 5000)),
      } as RequestInit);
      await res.arrayBuffer();
      outcome = String(res.status);
    } catch (error) {
      outcome = (error as Error).name === "TimeoutError" ? "no answer" : "connection error";
    }
    tally.answers[outcome] = (tally.answers[outcome] ?? 0) + 1;
    tally.slowestMs = Math.max(tally.slowestMs, Math.round(performance.now() - t0));
  }
}

await Promise.all(plan.requests.flatMap((r) => {
  const body = readFileSync(r.bodyFile, "utf8");
  return Array.from({ length: r.clients }, () => client(r, body));
}));
console.log(`hostile ${JSON.stringify(result)}`);
process.exit(0);
