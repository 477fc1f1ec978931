/**
 * Fan-out baseline, run as its own process: bare fetch POSTs from Bun to the same receivers, with the caps a
 * fanout delivery worker has by default (256 requests in flight in all, 16 per listener), the same
 * delivery body and Standard Webhooks header names. Nothing is read from or written to a database and nothing
 * is signed: the ratio to it is what fanout's claim/complete bookkeeping, signing and egress checks cost.
 * Each listener gets min(16, its share of 256) senders that loop until that listener's quota is sent.
 *
 * usage: bun baseline-fanout.ts --urls <u1,u2,…> --per <n> --global <n> --per-listener <n> --ttl <ms>
 * prints `done {"sent":…,"failures":…,"seconds":…}` and exits.
 */
import { argMap, exitWithParent } from "./child-life.ts";
import { deliveryBody } from "./payload.ts";

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 120_000));
const urls = (args.get("urls") ?? "").split(",").filter(Boolean);
const per = Number(args.get("per") ?? 1000);
const globalCap = Number(args.get("global") ?? 256);
const listenerCap = Number(args.get("per-listener") ?? 16);

const body = deliveryBody("msg_baseline0000000000000");
let sent = 0;
let failures = 0;

/** Senders per listener: the global cap shared out evenly, none above the per-listener cap. */
function sendersFor(index: number): number {
  const share = Math.floor(globalCap / urls.length) + (index < globalCap % urls.length ? 1 : 0);
  return Math.max(1, Math.min(listenerCap, share));
}

async function sender(url: string, quota: { left: number }): Promise<void> {
  while (quota.left > 0) {
    quota.left--;
    const id = `msg_b${sent.toString().padStart(19, "0")}`;
    try {
      const res = await fetch(url, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json", "user-agent": "fanout-bench/baseline", "webhook-id": id,
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,baseline-is-not-signed",
        },
      });
      await res.arrayBuffer();
      if (res.status >= 300) failures++;
      else sent++;
    } catch {
      failures++; // counted and reported; the receivers' own count is what the bench measures
    }
  }
}

const started = performance.now();
await Promise.all(urls.flatMap((url, i) => {
  const quota = { left: per };
  return Array.from({ length: sendersFor(i) }, () => sender(url, quota));
}));
console.log(`done ${JSON.stringify({ sent, failures, seconds: (performance.now() - started) / 1000 })}`);
process.exit(0);
