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
 * usage: bun receivers.ts --ports <n> --ttl <ms>; prints `receivers {"ports":[…],"control":<port>}`.
 */
import { argMap, exitWithParent } from "./child-life.ts";
import { wallMs } from "./payload.ts";

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 900_000));
const portCount = Number(args.get("ports") ?? 100);

let times = new Float64Array(1 << 20);
let count = 0;
let perPort: number[] = [];
let tracking = false;
let tracked: [string, number][] = [];

function record(index: number, webhookId: string | null): void {
  const t = wallMs();
  if (count === times.length) {
    const bigger = new Float64Array(times.length * 2);
    bigger.set(times);
    times = bigger;
  }
  times[count++] = t;
  perPort[index] = (perPort[index] ?? 0) + 1;
  if (tracking && webhookId) tracked.push([webhookId, t]);
}

function receiver(index: number) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      if (request.method === "POST") {
        await request.arrayBuffer(); // a real receiver reads what it is sent
        record(index, request.headers.get("webhook-id"));
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
    return Response.json({ ok: true });
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
