/** The SSRF guard end to end: a refused address is refused when saved and again at every connection. */
import { afterAll, expect, test } from "bun:test";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

const ENV = { FANOUT_RETRY_SCHEDULE: "100ms,200ms", FANOUT_LIVENESS_INTERVAL: "200ms", FANOUT_DELIVERY_TIMEOUT: "500ms" };
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function start(env: Record<string, string>, db?: string): Promise<Fanout> {
  const fanout = await startFanout({ env: { ...ENV, ...env }, db });
  cleanups.push(() => fanout.stop());
  return fanout;
}

test("a listener on 127.0.0.2 is refused when the allow list is 127.0.0.1/32, and nothing reaches it", async () => {
  const outside = await Receiver.start("127.0.0.2");
  cleanups.push(() => outside.close());
  const fanout = await start({ FANOUT_ALLOW_TARGETS: "127.0.0.1/32" });
  const api = deliveryApi(fanout);
  const queue = await api.queue();
  const reply = await fanout.call("h1", "POST", `/v1/queues/${queue}/listeners`, {
    body: { name: "outside", notify_url: outside.notifyUrl, liveness_url: outside.livenessUrl },
  });
  expect(reply.status).toBe(422);
  expect(outside.requests).toEqual([]);
});

test("a target allowed when saved but refused now is refused at connection time", async () => {
  const outside = await Receiver.start("127.0.0.2");
  const inside = await Receiver.start("127.0.0.1");
  cleanups.push(() => outside.close(), () => inside.close());
  // Saved while 127.0.0.0/8 was allowed (as a DNS change would do to a saved host name)...
  const before = await start({ FANOUT_ALLOW_TARGETS: "127.0.0.0/8" });
  let api = deliveryApi(before);
  const queue = await api.queue();
  const l = await api.listener(queue, "moved", { notifyUrl: outside.notifyUrl, livenessUrl: inside.livenessUrl });
  expect(await before.stop()).toBe(0);
  const heardBefore = outside.requests.length;
  // ...then served with only 127.0.0.1 allowed: no connection may reach 127.0.0.2 any more.
  const after = await start({ FANOUT_ALLOW_TARGETS: "127.0.0.1/32", FANOUT_BOOTSTRAP_KEY: before.key }, before.dbPath);
  api = deliveryApi(after);
  const id = await api.publish(queue, "refused");
  await api.settled(queue, id, l.id, "missed");
  expect(outside.requests.length).toBe(heardBefore);
  const attempts = await api.attempts(queue, id);
  expect(attempts).toHaveLength(3);
  for (const a of attempts) expect(a.error).toBe("refused target: 127.0.0.2 is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)");
  await waitFor(() => inside.probes().length > 0);
});
