/**
 * Recovery tools (docs/delivery.md) through the real server over HTTP/1.1 and HTTP/2: pausing a listener holds its
 * deliveries and resuming drains them; a 410 Gone pauses the listener at once; redelivering a message and
 * replaying a window start new cycles whose deliveries the receiver verifies with the listener's secret; every
 * refusal is a JSON 4xx that changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { PROTOS, startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, receiverSet, status, type Received } from "./receiver.ts";

const receivers = receiverSet();
/** Retries spent in 100 ms: deliveries turn missed at once, for redelivery and replay. */
let fanout: Fanout;
/** Held deliveries wait for an hour (the schedule's sum) instead of turning missed, for pausing. */
let patient: Fanout;
beforeAll(async () => {
  [fanout, patient] = await Promise.all([
    startFanout({ env: { FANOUT_RETRY_SCHEDULE: "100ms", FANOUT_LIVENESS_INTERVAL: "200ms", FANOUT_DELIVERY_TIMEOUT: "2s" } }),
    startFanout({ env: { FANOUT_RETRY_SCHEDULE: "1h", FANOUT_LIVENESS_INTERVAL: "200ms", FANOUT_DELIVERY_TIMEOUT: "2s" } }),
  ]);
});
afterAll(async () => {
  await Promise.all([fanout.stop(), patient.stop()]);
  receivers.closeAll();
});

/** Verifies a received delivery with the listener's secret, as a receiver would; returns its message id. */
function verified(secret: string, d: Received): string {
  const payload = new Webhook(secret).verify(d.body, d.headers) as { id: string };
  return payload.id;
}

for (const proto of PROTOS) {
  describe(`recovery over ${proto}`, () => {
    const api = () => deliveryApi(fanout, proto);
    const held = () => deliveryApi(patient, proto);

    test("a paused listener's deliveries wait; resuming it delivers them", async () => {
      const r = await receivers.start();
      const { call, queue, listener, publish, listenerView } = held();
      const q = await queue();
      const l = await listener(q, "pausable", r);
      expect((await listenerView(q, l.id)).enabled).toBe(true);
      expect((await call("PUT", `/v1/queues/${q}/listeners/${l.id}`, { enabled: false })).listener.id).toBe(l.id);
      expect((await listenerView(q, l.id)).enabled).toBe(false);
      const m = await publish(q, { n: 1 });
      const waiting = await held().settled(q, m, l.id, "pending");
      await waitFor(async () => (await held().message(q, m)).deliveries[0].next_attempt_at === null, 5_000, () => "never held");
      expect(waiting.attempts).toBe(0);
      expect(r.deliveries()).toHaveLength(0);
      await call("PUT", `/v1/queues/${q}/listeners/${l.id}`, { enabled: true });
      await r.waitForDeliveries(1);
      expect(verified(l.secret, r.deliveries()[0]!)).toBe(m);
      await held().settled(q, m, l.id, "acknowledged");
    });

    test("a listener created paused holds from the start", async () => {
      const r = await receivers.start();
      const { call, queue } = held();
      const q = await queue();
      const made = await call("POST", `/v1/queues/${q}/listeners`, { name: "born-paused", notify_url: r.notifyUrl, liveness_url: r.livenessUrl, enabled: false });
      expect((await held().listenerView(q, made.listener.id)).enabled).toBe(false);
    });

    test("a 410 Gone pauses the listener at once; the attempt shows the 410 and the delivery waits", async () => {
      const r = await receivers.start();
      r.answer("/notify", status(410));
      const { queue, listener, publish, listenerView, attempts } = held();
      const q = await queue();
      const l = await listener(q, "gone", r);
      const m = await publish(q, "first");
      await waitFor(async () => (await listenerView(q, l.id)).enabled === false, 5_000, () => "the 410 did not pause the listener");
      expect((await attempts(q, m)).map((a: { status_code: number }) => a.status_code)).toEqual([410]);
      const d = (await held().message(q, m)).deliveries[0];
      expect(d).toMatchObject({ state: "pending", next_attempt_at: null, last_status: 410 });
      // Resumed and answering again, it gets the held delivery.
      r.answer("/notify", () => new Response("ok"));
      await held().call("PUT", `/v1/queues/${q}/listeners/${l.id}`, { enabled: true });
      await held().settled(q, m, l.id, "acknowledged");
      expect(patient.output()).toContain("listener disabled: its receiver answered 410 Gone");
    });

    test("redeliver sends a message again under a new cycle; earlier attempts stay", async () => {
      const [a, b] = [await receivers.start(), await receivers.start()];
      const { call, queue, listener, publish, attempts } = api();
      const q = await queue();
      const la = await listener(q, "a", a);
      const lb = await listener(q, "b", b);
      const m = await publish(q, { order: 9 });
      await api().settled(q, m, la.id, "acknowledged");
      await api().settled(q, m, lb.id, "acknowledged");

      const one = await call("POST", `/v1/queues/${q}/messages/${m}/redeliver`, { listeners: [la.id] }, 202);
      expect(one.redelivered).toBe(1);
      expect(one._links.message.href).toEndWith(`/v1/queues/${q}/messages/${m}`);
      await a.waitForDeliveries(2);
      expect(a.deliveries().map((d) => verified(la.secret, d))).toEqual([m, m]);
      await waitFor(async () => (await attempts(q, m)).length === 3, 5_000, () => "the new attempt was not logged");
      const log = await attempts(q, m);
      expect(log.filter((x: { listener: { id: string } }) => x.listener.id === la.id).map((x: { cycle: number }) => x.cycle).sort()).toEqual([1, 2]);
      expect((await api().message(q, m)).deliveries.find((d: { listener: { id: string } }) => d.listener.id === la.id).cycle).toBe(2);

      // Without a body: every listener of the message.
      expect((await call("POST", `/v1/queues/${q}/messages/${m}/redeliver`, undefined, 202)).redelivered).toBe(2);
      await b.waitForDeliveries(2);
    });

    test("redeliver refuses unknown listeners and an empty list, changing nothing", async () => {
      const r = await receivers.start();
      const { queue, listener, publish } = api();
      const q = await queue();
      const l = await listener(q, "one", r);
      const m = await publish(q, 1);
      await api().settled(q, m, l.id, "acknowledged");
      const other = await listener(await queue(), "elsewhere", r);
      for (const body of [{ listeners: [other.id] }, { listeners: [] }, { listeners: ["lst_nope"] }]) {
        const reply = await fanout.call(proto, "POST", `/v1/queues/${q}/messages/${m}/redeliver`, { body });
        expect(reply.status).toBe(422);
        expect(reply.body).toMatchObject({ title: "Unprocessable Entity", status: 422, errors: [expect.objectContaining({ path: expect.stringMatching(/^\/listeners/) })] });
      }
      expect((await fanout.call(proto, "POST", `/v1/queues/${q}/messages/${m}/redeliver`, { body: { listeners: "all" } })).status).toBe(400);
      expect((await fanout.call(proto, "POST", `/v1/queues/${q}/messages/msg_nope/redeliver`, { body: {} })).status).toBe(404);
      expect((await api().message(q, m)).deliveries[0].cycle).toBe(1);
      expect(r.deliveries()).toHaveLength(1);
    });

    test("replay starts the missed deliveries of a window again; `all` takes the acknowledged ones too", async () => {
      const r = await receivers.start();
      r.answer("/notify", (req) => (JSON.parse(req.body).data.fail ? new Response("no", { status: 500 }) : new Response("ok")));
      const { call, queue, listener, publish, listenerView } = api();
      const q = await queue();
      const l = await listener(q, "replayed", r);
      const since = Date.now() - 1;
      const missed = [await publish(q, { fail: true, n: 1 }), await publish(q, { fail: true, n: 2 })];
      const acked = await publish(q, { fail: false });
      for (const m of missed) await api().settled(q, m, l.id, "missed");
      await api().settled(q, acked, l.id, "acknowledged");
      expect((await listenerView(q, l.id)).messages.missed_count).toBe(2);

      r.answer("/notify", () => new Response("ok"));
      const before = r.deliveries().length;
      const replay = await call("POST", `/v1/queues/${q}/listeners/${l.id}/replay`, { since }, 202);
      expect(replay.replayed).toBe(2);
      for (const m of missed) await api().settled(q, m, l.id, "acknowledged");
      const again = r.deliveries().slice(before).map((d) => verified(l.secret, d));
      expect(again.sort()).toEqual([...missed].sort());

      const all = await call("POST", `/v1/queues/${q}/listeners/${l.id}/replay`, { since, until: Date.now() + 1, only: "all" }, 202);
      expect(all.replayed).toBe(3);
      await waitFor(() => r.deliveries().length >= before + 5, 10_000, () => `got ${r.deliveries().length - before} of 5`);
      // A window before the messages holds nothing.
      expect((await call("POST", `/v1/queues/${q}/listeners/${l.id}/replay`, { since: since - 60_000, until: since - 30_000 }, 202)).replayed).toBe(0);
    });

    test("replay refuses an empty window, negative or fractional times and unknown values with a JSON 4xx", async () => {
      const r = await receivers.start();
      const { queue, listener } = api();
      const q = await queue();
      const l = await listener(q, "strict", r);
      const path = `/v1/queues/${q}/listeners/${l.id}/replay`;
      const cases: [unknown, number][] = [
        [{ since: 10, until: 5 }, 422], [{ since: 5, until: 5 }, 422], [{ since: -1 }, 400], [{ since: 1.5 }, 400],
        [{ since: "yesterday" }, 400], [{ since: 1, only: "some" }, 400], [{}, 400], [{ since: 1, extra: true }, 400],
      ];
      for (const [body, expected] of cases) {
        const reply = await fanout.call(proto, "POST", path, { body });
        expect({ body, status: reply.status }).toEqual({ body, status: expected });
        expect(reply.body.status).toBe(expected);
      }
      expect((await fanout.call(proto, "POST", `/v1/queues/${q}/listeners/lst_nope/replay`, { body: { since: 1 } })).status).toBe(404);
    });

    test("redeliveries and replays are usage events", async () => {
      const events = await fanout.call(proto, "GET", "/v1/events?limit=1000");
      const types = new Set((events.body.events as { type: string }[]).map((e) => e.type));
      expect(types.has("message_redelivered")).toBe(true);
      expect(types.has("listener_replayed")).toBe(true);
      const byCategory = await fanout.call(proto, "GET", "/v1/events?events=listeners&limit=1000");
      expect((byCategory.body.events as { type: string }[]).some((e) => e.type === "listener_replayed")).toBe(true);
    });
  });
}
