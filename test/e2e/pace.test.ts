/**
 * Each listener at its own pace and in order, end to end (docs/delivery.md, "Pace and order"): a rate limit seen
 * at the receiver, a listener's concurrency, and a FIFO listener that receives in publish order through failures,
 * timeouts, an outage, a pause, a missed delivery, a redelivery and a replay.
 */
import { describe, expect, test } from "bun:test";
import { startFanout, type Fanout } from "./harness.ts";
import { deliveryApi, serverForFile, type Receiver } from "./receiver.ts";
import { waitFor } from "../support/wait.ts";

// Five retries 20 ms apart, a 250 ms timeout, a probe every 100 ms: failures cost little time, and a listener is down fast.
const ENV = { FANOUT_RETRY_SCHEDULE: "20ms,20ms,20ms,20ms,20ms", FANOUT_DELIVERY_TIMEOUT: "250ms", FANOUT_LIVENESS_INTERVAL: "100ms" };

const { fanout, api, receiver } = serverForFile(ENV);

const idOf = (body: string) => JSON.parse(body).id as string;
const listenerOn = (queue: string, name: string, r: Receiver, settings: Record<string, unknown>, via = api) =>
  via.call("POST", `/v1/queues/${queue}/listeners`, { name, notify_url: r.notifyUrl, liveness_url: r.livenessUrl, ...settings });

/** Publishes `n` messages from `clients` callers at once; returns their ids in the order the service stored them. */
async function publishMany(queue: string, n: number, clients = 16, via = api): Promise<string[]> {
  const published = new Set<string>();
  let next = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < n) {
      const i = next++;
      published.add(await via.publish(queue, { i }));
    }
  }));
  // A queue's messages are listed in the order they were stored.
  const ids: string[] = [];
  for (let page = 1; ; page++) {
    const got: { id: string }[] = (await via.call("GET", `/v1/queues/${queue}/messages?per_page=100&page=${page}`)).messages;
    ids.push(...got.map((m) => m.id).filter((id) => published.has(id)));
    if (got.length < 100) return ids;
  }
}

/** Per message, when its receiver first answered it 2xx, in the order those answers came. */
function firstSuccesses(r: Receiver, ok: Set<string>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const d of r.deliveries()) {
    const id = idOf(d.body);
    if (ok.has(`${id}#${d.at}`) && !seen.has(id)) {
      seen.add(id);
      out.push(id);
    }
  }
  return out;
}

describe("rate limits and concurrency", () => {
  test("a listener at rate_limit 20 starts at most 20 in any second while an unlimited one takes its share at once", async () => {
    const [limited, free] = [await receiver(), await receiver()];
    const queue = await api.queue();
    const limitedId = (await listenerOn(queue, "limited", limited, { rate_limit: 20 })).listener.id;
    await listenerOn(queue, "free", free, {});
    const started = Date.now();
    await publishMany(queue, 1000, 16);
    await free.waitForDeliveries(1000, 30_000);
    const freeDone = Date.now() - started;
    // The limited listener's tenth second is over once it has had a delivery after it.
    await waitFor(() => limited.deliveries().some((d) => d.at - started > 10_500), 20_000);
    // The starts, as the worker recorded them (the receiver's clock adds each request's travel to them).
    const ids = limited.deliveries().filter((d) => d.at - started <= 10_000).map((d) => idOf(d.body));
    const times: number[] = [];
    for (const id of ids) {
      for (const a of await api.attempts(queue, id)) if (a.listener.id === limitedId) times.push(a.attempted_at - started);
    }
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(20);
    // About 20 a second from the first: most of the 200 the ten seconds allow.
    expect(times.length).toBeGreaterThan(150);
    expect(times.length).toBeLessThanOrEqual(201);
    expect(freeDone).toBeLessThan(10_000);
  }, 60_000);

  for (const concurrency of [1, 4]) {
    test(`concurrency ${concurrency} is what the receiver sees in flight`, async () => {
      const r = await receiver();
      let inFlight = 0;
      let peak = 0;
      r.answer("/notify", () => {
        peak = Math.max(peak, ++inFlight);
        return new Promise((resolve) => setTimeout(() => (inFlight--, resolve(new Response("ok"))), 40));
      });
      const queue = await api.queue();
      await listenerOn(queue, `c${concurrency}`, r, { concurrency });
      await publishMany(queue, 24, 8);
      await r.waitForDeliveries(24, 20_000);
      expect(peak).toBe(concurrency);
    }, 30_000);
  }

  test("a FIFO listener with a concurrency other than 1 is refused", async () => {
    const r = await receiver();
    const queue = await api.queue();
    const reply = await fanout().call("h1", "POST", `/v1/queues/${queue}/listeners`, {
      body: { name: "bad", notify_url: r.notifyUrl, liveness_url: r.livenessUrl, ordering: "fifo", concurrency: 2 },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.errors[0].path).toBe("/concurrency");
  });
});

describe("FIFO", () => {
  test("2,000 messages from 16 clients, with failures and timeouts, are first received in publish order", async () => {
    const r = await receiver();
    const ok = new Set<string>();
    let n = 0;
    r.answer("/notify", (req) => {
      const roll = (n++ * 7919) % 100; // a fixed spread of outcomes, the same every run
      if (roll < 6) return new Response("no", { status: 500 });
      if (roll === 50) return "hang";
      ok.add(`${idOf(req.body)}#${req.at}`);
      return new Response("ok");
    });
    const queue = await api.queue();
    await listenerOn(queue, "line", r, { ordering: "fifo" });
    const order = await publishMany(queue, 2000, 16);
    await waitFor(() => new Set(firstSuccesses(r, ok)).size === 2000, 120_000, () => `${new Set(firstSuccesses(r, ok)).size} of 2000 received`);
    expect(firstSuccesses(r, ok)).toEqual(order);
  }, 150_000);

  test("an outage, a pause, a missed delivery, a redelivery and a replay keep the line in order", async () => {
    // Its own server: held deliveries must outlast an outage and a pause, so the schedule spans 2 s.
    const fanout = await startFanout({ env: { ...ENV, FANOUT_RETRY_SCHEDULE: "20ms,20ms,20ms,20ms,2s" } });
    try {
      await lineThroughTrouble(fanout);
    } finally {
      await fanout.stop();
    }
  }, 60_000);
});

async function lineThroughTrouble(fanout: Fanout): Promise<void> {
  const api = deliveryApi(fanout);
  {
    const r = await receiver();
    const queue = await api.queue();
    const l = (await listenerOn(queue, "line", r, { ordering: "fifo" }, api)).listener.id;
    const path = `/v1/queues/${queue}/listeners/${l}`;
    const received = () => r.deliveries().map((d) => idOf(d.body));
    const view = () => api.call("GET", path).then((b) => b.listener);
    await waitFor(async () => (await view()).liveness.state === "stable");

    // Down: everything waits; back up: all of it in order.
    r.answer("/live", () => new Response("down", { status: 500 }));
    await waitFor(async () => (await view()).liveness.state === "down");
    const a = await publishMany(queue, 5, 1, api);
    // All five wait, the head first (held in the database: nothing in flight).
    await waitFor(async () => (await view()).line?.waiting === 5);
    expect((await view()).line.head).toMatchObject({ message_id: a[0], state: "pending", next_attempt_at: null });
    r.answer("/live", () => new Response("ok"));
    await waitFor(() => received().length >= 5);
    expect(received()).toEqual(a);

    // Paused: they wait; resumed: in order.
    await api.call("PUT", path, { enabled: false });
    const b = await publishMany(queue, 3, 1, api);
    await api.call("PUT", path, { enabled: true });
    await waitFor(() => received().length >= 8);
    expect(received().slice(5)).toEqual(b);

    // The head fails its whole schedule: missed, then the next goes.
    r.answer("/notify", (req) => (JSON.parse(req.body).data.fail ? new Response("no", { status: 500 }) : new Response("ok")));
    const missedId = await api.publish(queue, { fail: true });
    const after = await api.publish(queue, { fail: false });
    await api.settled(queue, after!, l, "acknowledged");
    const order = received().slice(8);
    expect(order.filter((id) => id === missedId)).toHaveLength(6);
    expect(order.at(-1)).toBe(after);
    expect((await api.message(queue, missedId!)).deliveries[0].state).toBe("missed");

    // Redeliver and replay: they join the line, sent once the receiver answers again.
    r.answer("/notify", () => new Response("ok"));
    await api.call("POST", `/v1/queues/${queue}/messages/${a[0]}/redeliver`, undefined, 202);
    await waitFor(() => received().at(-1) === a[0]);
    const before = received().length;
    await api.call("POST", `${path}/replay`, { since: 0, only: "missed" }, 202);
    await waitFor(() => received().length > before);
    expect(received().at(-1)).toBe(missedId);
  }
}
