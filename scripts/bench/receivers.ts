/**
 * Webhook receivers, run as their own process so fanout's delivery worker and the bare-fetch baseline meet the
 * same receiving cost. One Bun.serve per listener port, because a listener is its own origin to a delivery
 * worker (its own keep-alive pool and per-listener cap); sharing one port would let connections be reused
 * across listeners, which real listeners never allow.
 *
 *   POST <any path>  read the body, record the arrival, answer 204 (a delivery or a baseline POST); a path
 *                    /delay/<ms>/… answers that many milliseconds later (a receiver that takes its time)
 *   GET  /health     204 (a liveness probe that succeeds);  GET /down: 503 (one that fails, keeps a listener down)
 * Control port:
 *   POST /reset      forget every arrival;  POST /track?on=1|0: also keep (webhook-id, time) of each arrival
 *   GET  /stats      {count, perPort, first, last, at10, at90}: arrival times in wall ms (payload.ts wallMs)
 *   GET  /tracked    [[webhookId, ms], …]
 *   POST /timing?on=1|0: also keep each arrival's delay from the publish time its body carries (payload.ts
 *                    timedBody); GET /timing: {count, p50, p99, max} of those delays in ms
 * usage: bun receivers.ts --ports <n> --ttl <ms>; prints `receivers {"ports":[…],"control":<port>}`.
 */
import { argMap, exitWithParent } from "./child-life.ts";
import { SENT_FIELD, wallMs } from "./payload.ts";
import { percentile } from "./stats.ts";

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 900_000));
const portCount = Number(args.get("ports") ?? 100);

let times = new Float64Array(1 << 20);
let count = 0;
let perPort: number[] = [];
let tracking = false;
let tracked: [string, number][] = [];
let timing = false;
let delays: number[] = [];
const SENT = Buffer.from(`"${SENT_FIELD}":`);

/** The publish time is found by a byte search, not a JSON parse, so timing costs the receivers next to nothing. */
function sentMs(body: ArrayBuffer): number | undefined {
  const bytes = Buffer.from(body);
  const at = bytes.indexOf(SENT);
  if (at < 0) return undefined;
  let us = 0;
  for (let i = at + SENT.length; i < bytes.length && bytes[i]! >= 48 && bytes[i]! <= 57; i++) us = us * 10 + bytes[i]! - 48;
  return us / 1000;
}

function record(index: number, webhookId: string | null, body: ArrayBuffer): void {
  const t = wallMs();
  if (count === times.length) {
    const bigger = new Float64Array(times.length * 2);
    bigger.set(times);
    times = bigger;
  }
  times[count++] = t;
  perPort[index] = (perPort[index] ?? 0) + 1;
  if (tracking && webhookId) tracked.push([webhookId, t]);
  const sent = timing ? sentMs(body) : undefined;
  if (sent !== undefined) delays.push(t - sent);
}

function receiver(index: number) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      if (request.method === "POST") {
        const body = await request.arrayBuffer(); // a real receiver reads what it is sent
        record(index, request.headers.get("webhook-id"), body);
        const delay = /^\/delay\/(\d+)/.exec(new URL(request.url).pathname);
        if (delay) await Bun.sleep(Number(delay[1]));
        return new Response(null, { status: 204 });
      }
      return new Response(null, { status: new URL(request.url).pathname === "/down" ? 503 : 204 });
    },
  });
}

/** Arrivals are recorded in time order, so the n-th arrival is times[n]; at10/at90 bound the sustained window. */
function stats() {
  const at = (q: number) => (count ? times[Math.min(count - 1, Math.floor(q * count))]! : null);
  return { count, perPort, first: at(0), last: count ? times[count - 1]! : null, at10: at(0.1), at90: at(0.9) };
}

function control(request: Request): Response {
  const url = new URL(request.url);
  if (url.pathname === "/reset") {
    count = 0;
    perPort = [];
    tracked = [];
    delays = [];
    return Response.json({ ok: true });
  }
  if (url.pathname === "/timing" && request.method === "POST") {
    timing = url.searchParams.get("on") === "1";
    return Response.json({ ok: true });
  }
  if (url.pathname === "/timing") {
    return Response.json({ count: delays.length, p50: percentile(delays, 50), p99: percentile(delays, 99), max: percentile(delays, 100) });
  }
  if (url.pathname === "/track") {
    tracking = url.searchParams.get("on") === "1";
    return Response.json({ ok: true });
  }
  if (url.pathname === "/tracked") return Response.json(tracked);
  if (url.pathname === "/stats") return Response.json(stats());
  return new Response("not found", { status: 404 });
}

const servers = Array.from({ length: portCount }, (_, i) => receiver(i));
const controlServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: control });
console.log(`receivers ${JSON.stringify({ ports: servers.map((s) => s.port), control: controlServer.port })}`);
