/**
 * Crash safety: kill -9 while messages are being published and delivered, restart on the same file, and every
 * message that was answered 200 still reaches its listener (at least once).
 */
import { afterAll, expect, test } from "bun:test";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

const ENV = { FANOUT_RETRY_SCHEDULE: "100ms,200ms", FANOUT_LIVENESS_INTERVAL: "1s", FANOUT_DELIVERY_TIMEOUT: "500ms" };
const MESSAGES = 400;
const PUBLISHERS = 16;
const KILL_AFTER = 200;

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Publishes from several concurrent clients until `MESSAGES` are sent or the server dies; returns ids answered 200. */
async function publishUntilKilled(fanout: Fanout, queue: string, onAnswered: (count: number) => void): Promise<string[]> {
  const answered: string[] = [];
  let next = 0;
  const publisher = async (proto: "h1" | "h2") => {
    while (next < MESSAGES) {
      const n = next++;
      let reply;
      try {
        reply = await fanout.call(proto, "POST", `/v1/queues/${queue}/messages`, { body: { name: `m${n}`, data: { n } } });
      } catch {
        return; // the server was killed under this request: it was never answered, so it promises nothing
      }
      if (reply.status === 0) return; // HTTP/2: the stream ended without a response when the server died
      if (reply.status !== 200) throw new Error(`publish answered ${reply.status}: ${reply.text}`);
      answered.push(reply.body.message.id);
      onAnswered(answered.length);
    }
  };
  await Promise.all(Array.from({ length: PUBLISHERS }, (_, i) => publisher(i % 2 ? "h2" : "h1")));
  return answered;
}

test("kill -9 mid-way loses no message answered 200: after a restart every one reaches its listener", async () => {
  const r = await Receiver.start();
  cleanups.push(() => r.close());
  // A slow listener keeps deliveries in flight and a backlog pending at the moment of the kill.
  r.answer("/notify", () => Bun.sleep(20).then(() => new Response("ok")));
  const first = await startFanout({ env: ENV });
  const api = deliveryApi(first);
  const queue = await api.queue();
  const l = await api.listener(queue, "durable", r);
  let missingAtKill = -1;
  const answered = await publishUntilKilled(first, queue, (count) => {
    if (count !== KILL_AFTER) return;
    first.kill();
    const seen = new Set(r.deliveries().map((x) => x.headers["webhook-id"]));
    missingAtKill = count - seen.size;
  });
  expect(answered.length).toBeGreaterThanOrEqual(KILL_AFTER);
  expect(answered.length).toBeLessThan(MESSAGES);
  expect(missingAtKill).toBeGreaterThan(0);

  const second = await startFanout({ env: { ...ENV, FANOUT_BOOTSTRAP_KEY: first.key }, db: first.dbPath });
  cleanups.push(() => second.stop());
  const seen = () => new Set(r.deliveries().map((x) => x.headers["webhook-id"]));
  await waitFor(() => answered.every((id) => seen().has(id)), 30_000, () => {
    const lost = answered.filter((id) => !seen().has(id));
    return `${lost.length} of ${answered.length} answered messages never arrived:\n${second.output()}`;
  });
  // Requests in flight at the kill may have reached the receiver unrecorded: their leases expire (delivery
  // timeout + margin), they are sent again, and then every delivery is acknowledged in the store too.
  const after = deliveryApi(second);
  const acknowledged = async () => (await after.listenerView(queue, l.id)).messages.acknowledged_count;
  await waitFor(async () => (await acknowledged()) >= answered.length, 30_000, () => `acknowledged stayed below ${answered.length}`);
  for (const id of answered.slice(0, 20)) await after.settled(queue, id, l.id, "acknowledged");
}, 60_000);
