/** Delivery end to end (docs/delivery.md): the real server sends to receivers on 127.0.0.1 with a fast schedule. */
import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { PROTOS, waitFor } from "./harness.ts";
import { VERSION } from "../../src/version.ts";
import { deliveryApi, serverForFile, status } from "./receiver.ts";

// Three attempts in all (the first and two retries), 500 ms each at most.
const ENV = { FANOUT_RETRY_SCHEDULE: "100ms,200ms", FANOUT_LIVENESS_INTERVAL: "200ms", FANOUT_DELIVERY_TIMEOUT: "500ms" };

const { fanout, api, receiver } = serverForFile(ENV);

describe("fan-out", () => {
  for (const proto of PROTOS) {
    test(`a message reaches the listeners created before it, never a later one (${proto})`, async () => {
      const p = deliveryApi(fanout(), proto);
      const [early, late] = [await receiver(), await receiver()];
      const queue = await p.queue();
      const a = await p.listener(queue, "early", early);
      const m1 = await p.publish(queue, { n: 1 });
      const b = await p.listener(queue, "late", late);
      const m2 = await p.publish(queue, { n: 2 });
      await p.settled(queue, m1, a.id, "acknowledged");
      await p.settled(queue, m2, b.id, "acknowledged");
      await p.settled(queue, m2, a.id, "acknowledged");
      // m1 has no delivery row for the later listener at all, so nothing can ever send it there.
      expect((await p.message(queue, m1)).deliveries.map((d: any) => d.listener.id)).toEqual([a.id]);
      expect(late.deliveries().map((r) => r.headers["webhook-id"])).toEqual([m2]);
      expect(early.deliveries().map((r) => r.headers["webhook-id"]).sort()).toEqual([m1, m2].sort());
    });
  }
});

test("the request carries the documented payload and headers, signed per Standard Webhooks", async () => {
  const r = await receiver();
  const queue = await api.queue("signed");
  const l = await api.listener(queue, "signed", r);
  const data = { total: 42, note: "é ✓", nested: [1, { x: null }] };
  const id = await api.publish(queue, data, "order.created");
  const [got] = await r.waitForDeliveries(1);
  const message = await api.message(queue, id);
  expect(got!.method).toBe("POST");
  expect(got!.headers).toMatchObject({ "content-type": "application/json", "user-agent": `fanout/${VERSION}`, "webhook-id": id });
  expect(Math.abs(Number(got!.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(10);
  const payload = new Webhook(l.secret).verify(got!.body, got!.headers);
  expect(payload).toEqual({ id, name: "order.created", queue: { id: queue, name: "signed" }, data, created_at: message.created_at });
  expect(() => new Webhook(l.secret).verify(got!.body.replace("42", "43"), got!.headers)).toThrow();
});

test("a listener failing twice then acknowledging gets the same webhook-id three times", async () => {
  const r = await receiver();
  r.answer("/notify", (_req, i) => (i < 2 ? new Response("no", { status: 500 }) : new Response("ok")));
  const queue = await api.queue();
  const l = await api.listener(queue, "flaky", r);
  const id = await api.publish(queue, "payload");
  const delivery = await api.settled(queue, id, l.id, "acknowledged");
  expect(delivery).toMatchObject({ attempts: 3, last_status: 200, last_error: null, next_attempt_at: null });
  const got = r.deliveries();
  expect(got.map((x) => x.headers["webhook-id"])).toEqual([id, id, id]);
  // Retries wait their scheduled delay, 100 ms then 200 ms, each within ±10 % jitter.
  expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(85);
  expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(175);
  for (const x of got) expect(new Webhook(l.secret).verify(x.body, x.headers)).toMatchObject({ id, data: "payload" });
  const attempts = await api.attempts(queue, id);
  expect(attempts.map((a: any) => [a.attempt, a.status_code, a.response])).toEqual([[3, 200, "ok"], [2, 500, "no"], [1, 500, "no"]]);
  expect((await api.listenerView(queue, l.id)).messages).toEqual({ acknowledged_count: 1, missed: [], missed_count: 0 });
});

test("each cycle's acknowledging attempt stays in the log, newest first, through a redelivery and a replay", async () => {
  const r = await receiver();
  r.answer("/notify", (_req, i) => new Response(`ok ${i + 1}`));
  const queue = await api.queue();
  const l = await api.listener(queue, "thrice", r);
  const since = Date.now() - 1;
  const id = await api.publish(queue, { n: 1 });
  await api.settled(queue, id, l.id, "acknowledged");
  const logOf = async (n: number) => {
    await waitFor(async () => (await api.attempts(queue, id)).length === n, 10_000, () => `the log never held ${n} attempts`);
    return api.attempts(queue, id);
  };
  const [first] = await logOf(1);
  expect(first).toMatchObject({ listener: { id: l.id, name: "thrice" }, attempt: 1, cycle: 1, status_code: 200, error: null, response: "ok 1" });
  expect(first.attempted_at).toBeGreaterThanOrEqual(since);
  expect(first.duration_ms).toBeGreaterThanOrEqual(0);

  await api.call("POST", `/v1/queues/${queue}/messages/${id}/redeliver`, undefined, 202);
  expect((await logOf(2)).map((a: any) => [a.cycle, a.attempt, a.response])).toEqual([[2, 1, "ok 2"], [1, 1, "ok 1"]]);
  await api.settled(queue, id, l.id, "acknowledged");

  const replay = await api.call("POST", `/v1/queues/${queue}/listeners/${l.id}/replay`, { since, until: Date.now() + 1, only: "all" }, 202);
  expect(replay.replayed).toBe(1);
  const log = await logOf(3);
  expect(log.map((a: any) => [a.cycle, a.attempt, a.status_code, a.response])).toEqual([[3, 1, 200, "ok 3"], [2, 1, 200, "ok 2"], [1, 1, 200, "ok 1"]]);
  // The earlier cycles' attempts are unchanged by the later ones.
  expect(log[2]).toEqual(first);
  expect(await api.settled(queue, id, l.id, "acknowledged")).toMatchObject({ attempts: 1, cycle: 3, last_status: 200 });
});

test("a listener that never acknowledges ends with the message missed, counted exactly", async () => {
  const r = await receiver();
  r.answer("/notify", status(503));
  const queue = await api.queue();
  const l = await api.listener(queue, "failing", r);
  const first = await api.publish(queue, 1);
  const second = await api.publish(queue, 2);
  await api.settled(queue, first, l.id, "missed");
  const delivery = await api.settled(queue, second, l.id, "missed");
  expect(delivery).toMatchObject({ attempts: 3, last_status: 503 });
  expect(r.deliveries().filter((x) => x.headers["webhook-id"] === first)).toHaveLength(3);
  const view = await api.listenerView(queue, l.id);
  expect(view.messages.missed_count).toBe(2);
  expect(view.messages.acknowledged_count).toBe(0);
  expect([...view.messages.missed].sort()).toEqual([first, second].sort());
});

test("a listener that hangs is cut off by the delivery timeout on every attempt", async () => {
  const r = await receiver();
  r.answer("/notify", () => "hang");
  const queue = await api.queue();
  const l = await api.listener(queue, "hanging", r);
  const id = await api.publish(queue, { slow: true });
  await api.settled(queue, id, l.id, "missed", 15_000);
  const attempts = await api.attempts(queue, id);
  expect(attempts).toHaveLength(3);
  // The delivery timeout's own watchdog cut each one (its error names it), and not before its time.
  for (const a of attempts) {
    expect(a).toMatchObject({ status_code: null, error: "timeout after 500ms" });
    expect(a.duration_ms).toBeGreaterThanOrEqual(490);
  }
});

test("a redirect is a failure and is never followed", async () => {
  const r = await receiver();
  r.answer("/notify", () => new Response(null, { status: 302, headers: { location: `${r.origin}/elsewhere` } }));
  const queue = await api.queue();
  const l = await api.listener(queue, "redirecting", r);
  const id = await api.publish(queue, {});
  await api.settled(queue, id, l.id, "missed");
  expect(r.requests.filter((x) => x.path === "/elsewhere")).toEqual([]);
  expect((await api.attempts(queue, id)).map((a: any) => [a.status_code, a.error])).toEqual([
    [302, "redirect not followed"], [302, "redirect not followed"], [302, "redirect not followed"],
  ]);
});

test("after a rotation both the new and the old secret verify the signature", async () => {
  const r = await receiver();
  const queue = await api.queue();
  const l = await api.listener(queue, "rotating", r);
  const rotated = await api.call("POST", `/v1/queues/${queue}/listeners/${l.id}/secret/rotate`);
  expect(rotated.previous_secret).toBe(l.secret);
  expect(rotated.secret).not.toBe(l.secret);
  const id = await api.publish(queue, "rotated");
  const [got] = await r.waitForDeliveries(1);
  expect(got!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
  expect(new Webhook(rotated.secret).verify(got!.body, got!.headers)).toMatchObject({ id });
  expect(new Webhook(l.secret).verify(got!.body, got!.headers)).toMatchObject({ id });
});

test("deleting a message stops its retries", async () => {
  const r = await receiver();
  r.answer("/notify", status(500));
  const queue = await api.queue();
  await api.listener(queue, "deleted", r);
  const id = await api.publish(queue, "gone");
  await r.waitForDeliveries(1);
  await api.call("DELETE", `/v1/queues/${queue}/messages/${id}`);
  const after = r.deliveries().length;
  // A later message on the same listener is attempted three times; the deleted one must not come back meanwhile.
  const marker = await api.publish(queue, "marker");
  await waitFor(() => r.deliveries().filter((x) => x.headers["webhook-id"] === marker).length === 3);
  expect(r.deliveries().slice(after).filter((x) => x.headers["webhook-id"] === id).length).toBeLessThanOrEqual(1);
  expect(r.deliveries().filter((x) => x.headers["webhook-id"] === id).length).toBeLessThanOrEqual(2);
});
