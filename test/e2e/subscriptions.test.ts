/**
 * Listeners that choose what they receive and how they are called, end to end (docs/api.md, "Listeners: filters
 * and headers", "Operational messages"): filters at the fan-out, trying a filter, the listener's own headers on
 * deliveries and probes, and usage events published to the organization's events queue as signed webhooks.
 */
import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { PROTOS, waitFor } from "./harness.ts";
import { deliveryApi, serverForFile, status } from "./receiver.ts";

// Two attempts (the first and one retry) 100 ms apart; a probe every 200 ms, so a listener is down in under a second.
const ENV = { FANOUT_RETRY_SCHEDULE: "100ms", FANOUT_LIVENESS_INTERVAL: "200ms", FANOUT_DELIVERY_TIMEOUT: "500ms" };

const { fanout, api, receiver } = serverForFile(ENV);

const names = (r: { deliveries(): { body: string }[] }) => r.deliveries().map((d) => JSON.parse(d.body).name as string | null);

describe("filters", () => {
  for (const proto of PROTOS) {
    test(`each listener receives only the messages its filter takes (${proto})`, async () => {
      const p = deliveryApi(fanout(), proto);
      const [all, orders, gold, marker] = [await receiver(), await receiver(), await receiver(), await receiver()];
      const queue = await p.queue();
      const add = (name: string, r: typeof all, filter?: unknown) =>
        p.call("POST", `/v1/queues/${queue}/listeners`, { name, notify_url: r.notifyUrl, liveness_url: r.livenessUrl, ...(filter === undefined ? {} : { filter }) });
      await add("all", all);
      await add("orders", orders, { names: ["order.*"] });
      await add("gold", gold, { data: { "customer.tier": "gold", total: { $gte: 100 } } });
      await add("marker", marker, { names: ["end"] });
      await p.publish(queue, { customer: { tier: "gold" }, total: 150 }, "order.created");
      await p.publish(queue, { customer: { tier: "silver" }, total: 500 }, "order.paid");
      await p.publish(queue, JSON.stringify({ customer: { tier: "gold" }, total: 100 }), "invoice.paid");
      await p.publish(queue, { total: 1 });
      await p.publish(queue, {}, "end");
      // The marker's one message is the last published: once it and every other expected delivery arrived, nothing more is due.
      await marker.waitForDeliveries(1);
      await all.waitForDeliveries(5);
      await orders.waitForDeliveries(2);
      await gold.waitForDeliveries(2);
      expect(names(orders).sort()).toEqual(["order.created", "order.paid"]);
      expect(names(gold).sort()).toEqual(["invoice.paid", "order.created"]);
      expect(names(marker)).toEqual(["end"]);
      const view = (await p.call("GET", `/v1/queues/${queue}/listeners`)).listeners.find((l: any) => l.name === "gold");
      expect(view.filter).toEqual({ data: { "customer.tier": "gold", total: { $gte: 100 } } });
    });
  }

  test("an invalid filter is a 422 naming the offending path; a filter of the wrong kind a 400", async () => {
    const queue = await api.queue();
    const r = await receiver();
    const post = (filter: unknown) => fanout().call("h1", "POST", `/v1/queues/${queue}/listeners`, {
      body: { name: `l-${crypto.randomUUID()}`, notify_url: r.notifyUrl, liveness_url: r.livenessUrl, filter },
    });
    const cases: [unknown, string][] = [
      [{ names: [] }, "/filter/names"],
      [{ names: Array.from({ length: 51 }, (_, i) => `n${i}`) }, "/filter/names"],
      [{ names: ["x".repeat(201)] }, "/filter/names/0"],
      [{ data: { total: { $regex: "a+" } } }, "/filter/data/total/$regex"],
      [{ data: { total: { $in: Array.from({ length: 101 }, (_, i) => i) } } }, "/filter/data/total/$in"],
      [{ data: { "a.b.c.d.e.f.g.h.i.j.k": 1 } }, "/filter/data/a.b.c.d.e.f.g.h.i.j.k"],
      [{ data: { $or: [] } }, "/filter/data/$or"],
      [{ nmes: ["x"] }, "/filter/nmes"],
      [{ data: { a: "x".repeat(8200) } }, "/filter"],
      [{ data: { $and: Array.from({ length: 201 }, (_, i) => ({ [`k${i}`]: 1 })) } }, "/filter/data/$and/199/k199"],
      [{ data: { a: { $eq: [[[[[[[[[1]]]]]]]]] } } }, "/filter/data/a/$eq/0/0/0/0/0/0"],
    ];
    for (const [filter, path] of cases) {
      const reply = await post(filter);
      expect({ filter, status: reply.status }).toEqual({ filter, status: 422 });
      expect(reply.body.errors.map((e: any) => e.path)).toContain(path);
    }
    expect((await post("order.*")).status).toBe(400);
    expect((await fanout().call("h1", "GET", `/v1/queues/${queue}/listeners`)).body.listeners).toEqual([]);
  });

  test("filter_test answers for one message, or counts the queue's newest messages", async () => {
    const queue = await api.queue();
    for (let i = 0; i < 5; i++) await api.publish(queue, { n: i }, i % 2 ? "odd" : "even");
    const test = (body: unknown) => fanout().call("h1", "POST", `/v1/queues/${queue}/filter_test`, { body });
    expect((await test({ filter: { names: ["odd"] } })).body).toEqual({ matched: 2, of: 5 });
    expect((await test({ filter: { data: { n: { $gte: 3 } } } })).body).toEqual({ matched: 2, of: 5 });
    expect((await test({ filter: { names: ["o*"] }, message: { name: "order", data: {} } })).body).toEqual({ matches: true });
    expect((await test({ filter: { names: ["o*"] }, message: { data: {} } })).body).toEqual({ matches: false });
    const bad = await test({ filter: { data: { n: { $gt: {} } } } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].path).toBe("/filter/data/n/$gt");
    expect((await fanout().call("h1", "POST", "/v1/queues/q_unknown/filter_test", { body: { filter: {} } })).status).toBe(404);
  });
});

describe("headers", () => {
  test("the listener's headers go with every delivery and probe; reserved names are refused; readers see them hidden", async () => {
    const r = await receiver();
    const queue = await api.queue();
    const secret = `Bearer ${crypto.randomUUID()}`;
    const created = await api.call("POST", `/v1/queues/${queue}/listeners`, {
      name: "gateway", notify_url: r.notifyUrl, liveness_url: r.livenessUrl, headers: { Authorization: secret, "X-Tenant": "t1" },
    });
    const id = created.listener.id;
    await api.publish(queue, { n: 1 });
    const [delivery] = await r.waitForDeliveries(1);
    expect(delivery!.headers).toMatchObject({ authorization: secret, "x-tenant": "t1", "content-type": "application/json" });
    const probe = await waitFor(() => r.probes()[0]);
    expect(probe.headers).toMatchObject({ authorization: secret, "x-tenant": "t1" });

    for (const name of ["Host", "content-type", "Webhook-Signature", "user-agent", "bad name"]) {
      const reply = await fanout().call("h1", "PUT", `/v1/queues/${queue}/listeners/${id}`, { body: { headers: { [name]: "x" } } });
      expect({ name, status: reply.status }).toEqual({ name, status: 422 });
      expect(reply.text).not.toContain(secret);
    }
    const reader = await api.call("POST", "/v1/api_keys", { name: "reader", scopes: [{ resource: "listeners", access: "read", targets: ["*"] }] });
    const asReader = await fanout().call("h1", "GET", `/v1/queues/${queue}/listeners/${id}`, { key: reader.api_key });
    expect(asReader.body.listener.headers).toEqual({ Authorization: "[hidden]", "X-Tenant": "[hidden]" });
    expect((await api.listenerView(queue, id)).headers).toEqual({ Authorization: secret, "X-Tenant": "t1" });
    // Never in a usage event or a log line.
    expect(JSON.stringify((await api.call("GET", "/v1/events?limit=1000")).events)).not.toContain(secret);
    expect(fanout().output()).not.toContain(secret);
    await api.call("PUT", `/v1/queues/${queue}/listeners/${id}`, { headers: null });
    expect((await api.listenerView(queue, id)).headers).toBeNull();
  });
});

describe("operational messages", () => {
  test("a listener going down and up and a missed message reach the events queue as signed webhooks, without a loop", async () => {
    const [ops, flaky] = [await receiver(), await receiver()];
    const events = await api.queue("events");
    const orgId: string = (await api.call("GET", "/v1/events?events=queues&limit=1000")).events.at(-1).client.id;
    const opsListener = await api.call("POST", `/v1/queues/${events}/listeners`, {
      name: "ops", notify_url: ops.notifyUrl, liveness_url: ops.livenessUrl, filter: { names: ["listener_state_changed", "message_missed"] },
    });
    expect((await api.call("PUT", `/v1/api_clients/${orgId}`, { events_queue_id: events })).api_client.events_queue_id).toBe(events);

    const queue = await api.queue();
    const watched = await api.listener(queue, "flaky", flaky);
    await waitFor(async () => (await api.listenerView(queue, watched.id)).liveness.state === "stable");
    flaky.answer("/live", status(500)).answer("/notify", status(500));
    await waitFor(async () => (await api.listenerView(queue, watched.id)).liveness.state === "down", 10_000);
    flaky.answer("/live", () => new Response("ok"));
    await waitFor(async () => (await api.listenerView(queue, watched.id)).liveness.state === "stable", 10_000);
    const message = await api.publish(queue, { n: 1 });
    await api.settled(queue, message, watched.id, "missed");

    const received = () => ops.deliveries().map((d) => ({ ...new Webhook(opsListener.secret).verify(d.body, d.headers) as any }));
    const seen = await waitFor(() => {
      const got = received();
      return got.some((m) => m.name === "message_missed") && got.filter((m) => m.name === "listener_state_changed").length >= 3 && got;
    }, 10_000, () => `events queue got ${JSON.stringify(received().map((m) => m.name))}`);
    const changes = seen.filter((m) => m.name === "listener_state_changed" && m.data.listener.id === watched.id).map((m) => [m.data.from, m.data.to]);
    expect(changes).toEqual([["pending", "stable"], ["stable", "unstable"], ["unstable", "down"], ["down", "stable"]].slice(0, changes.length));
    expect(changes).toContainEqual(["unstable", "down"]);
    expect(changes).toContainEqual(["down", "stable"]);
    const missed = seen.find((m) => m.name === "message_missed")!;
    expect(missed.data).toMatchObject({ type: "message_missed", queue: { id: queue }, listener: { id: watched.id }, message: { id: message }, api_key: null });
    expect((await api.call("GET", "/v1/events?events=listeners&limit=1000")).events.map((e: any) => e.type)).toContain("listener_state_changed");

    // The events queue's own listener fails: the missed deliveries of its messages are usage events about the
    // events queue, and are not published there again.
    ops.answer("/notify", status(500));
    const m2 = await api.publish(queue, { n: 2 });
    await api.settled(queue, m2, watched.id, "missed");
    await waitFor(async () => (await api.call("GET", "/v1/events?events=messages&limit=1000")).events
      .some((e: any) => e.type === "message_missed" && e.queue.id === events), 10_000);
    const published = (await api.call("GET", `/v1/queues/${events}/messages?per_page=100`)).messages.filter((x: any) => x.name === "message_missed");
    const about = await Promise.all(published.map(async (m: any) => (await api.message(events, m.id)).data.queue.id));
    expect(about).toEqual([queue, queue]);
  });
});

describe("test messages", () => {
  test("POST …/test sends one signed fanout.test message to that listener alone, logged like any delivery", async () => {
    const [target, other] = [await receiver(), await receiver()];
    const queue = await api.queue();
    const l = await api.call("POST", `/v1/queues/${queue}/listeners`, {
      name: "target", notify_url: target.notifyUrl, liveness_url: target.livenessUrl, filter: { names: ["never.sent"] },
    });
    await api.listener(queue, "other", other);
    const reply = await fanout().call("h1", "POST", `/v1/queues/${queue}/listeners/${l.listener.id}/test`);
    expect(reply.status).toBe(202);
    expect(reply.body.message.name).toBe("fanout.test");
    const [got] = await target.waitForDeliveries(1);
    const payload = new Webhook(l.secret).verify(got!.body, got!.headers) as any;
    expect(payload).toMatchObject({ id: reply.body.message.id, name: "fanout.test", data: { test: true, listener: { id: l.listener.id, name: "target" } } });
    await api.settled(queue, reply.body.message.id, l.listener.id, "acknowledged");
    expect((await api.attempts(queue, reply.body.message.id)).map((a: any) => [a.listener.id, a.status_code])).toEqual([[l.listener.id, 200]]);
    expect((await api.message(queue, reply.body.message.id)).deliveries.map((d: any) => d.listener.id)).toEqual([l.listener.id]);
    expect(other.deliveries()).toEqual([]);
    expect((await fanout().call("h1", "POST", `/v1/queues/${queue}/listeners/lst_none/test`)).status).toBe(404);
    const reader = await api.call("POST", "/v1/api_keys", { name: "tester-reader", scopes: [{ resource: "listeners", access: "read", targets: ["*"] }] });
    expect((await fanout().call("h1", "POST", `/v1/queues/${queue}/listeners/${l.listener.id}/test`, { key: reader.api_key })).status).toBe(403);
  });
});
