/**
 * Conformance: what a listener receives and how it is called (docs/api.md, "Listeners: filters and headers"), and
 * the events the delivery store records and publishes to an organization's events queue ("Operational
 * messages"). The fan-out happens at the publish on PostgreSQL and at the worker's next claim on SQLite; both must
 * give the same deliveries.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import type { Actor, ListenerInput, Queue, Store } from "../../src/store/index.ts";
import { FANOUT_ROWS, type ClaimedDelivery, type ClaimRequest, type Completion, type Settlement } from "../../src/store/deliveries.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const request: ClaimRequest = { owner: "w1", leaseMs: 10_000, limit: 500, perListener: 500, busy: new Map() };

function completion(c: ClaimedDelivery, next: Settlement, at: number, status: number | null = 200): Completion {
  return {
    id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, attempt: c.attempt + 1, next,
    record: { attemptedAt: at, statusCode: status, durationMs: 5, error: null, response: null },
  };
}

for (const backend of storeBackends()) {
  describe(`${backend.name} store: subscriptions`, () => {
    let store: Store;
    let org: string;
    let queue: Queue;
    const clock = manualClock();
    const listener = (name: string, settings: Partial<ListenerInput> = {}, q = queue) =>
      store.listeners.create(org, q.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/live`, secret: "s", ...settings },
        clock.now(), actor);
    const publish = (name: string | null, data: unknown, q = queue) =>
      store.messages.publish(org, q.id, { name, data: JSON.stringify(data) }, clock.now(), actor);
    const claim = async () => (await store.deliveries.claimDue(request, clock.now())).claimed;
    /** Listener names each message went to, claimed (and so fanned out) first. */
    const routes = async (ids: string[]) => {
      const claimed = await claim();
      return ids.map((id) => claimed.filter((c) => c.message.id === id).map((c) => c.listener.id));
    };

    beforeEach(async () => {
      clock.set(1_700_000_000_000);
      store = await backend.open();
      org = (await store.orgs.create("com.example.subs", clock.now())).id;
      queue = await store.queues.create(org, { name: "orders", schema: null, schemaId: null }, clock.now(), actor);
    });
    afterEach(async () => store.close());

    test("a filter decides which messages a listener gets: names, data, both, neither", async () => {
      const all = await listener("all");
      const orders = await listener("orders", { filter: { names: ["order.*"] } });
      const gold = await listener("gold", { filter: { data: { "customer.tier": "gold", total: { $gte: 100 } } } });
      const both = await listener("both", { filter: { names: ["invoice.paid"], data: { lines: { $contains: "x" } } } });
      const m = [
        await publish("order.created", { customer: { tier: "gold" }, total: 150 }),
        await publish("order.created", { customer: { tier: "gold" }, total: 99 }),
        await publish("invoice.paid", { lines: ["x", "y"], total: "150" }),
        await publish(null, JSON.stringify({ customer: { tier: "gold" }, total: 100 })), // data as a string holding JSON
        await publish("invoice.paid", { lines: [] }),
      ];
      expect(await routes(m.map((x) => x.id))).toEqual([
        [all.id, orders.id, gold.id],
        [all.id, orders.id],
        [all.id, both.id],
        [all.id, gold.id],
        [all.id],
      ]);
      // What GET shows: only the listeners the message went to.
      expect((await store.messages.deliveries(org, queue.id, m[3]!.id)).map((d) => d.listenerId)).toEqual([all.id, gold.id]);
    });

    test("GET of a message not fanned out yet lists only the listeners its filters take", async () => {
      const a = await listener("a", { filter: { names: ["a"] } });
      const b = await listener("b", { filter: { names: ["b"] } });
      const m = await publish("b", {});
      expect((await store.messages.deliveries(org, queue.id, m.id)).map((d) => d.listenerId)).toEqual([b.id]);
      expect(a.filter).toEqual({ names: ["a"] });
    });

    test.if(backend.fansOutInClaims)("a slice holds about FANOUT_ROWS of the deliveries filters take, in message order across queues", async () => {
      // Queue A: 50 listeners, queue B: 30, each taking a tenth, so a message makes 5 deliveries on A and 3 on B.
      const other = await store.queues.create(org, { name: "refunds", schema: null, schemaId: null }, clock.now(), actor);
      for (let i = 0; i < 50; i++) await listener(`a${i}`, { filter: { data: { bucket: i % 10 } } });
      for (let i = 0; i < 30; i++) await listener(`b${i}`, { filter: { data: { bucket: i % 10 } } }, other);
      const pairs = FANOUT_ROWS / 8 + 100;
      const published: string[] = [];
      for (let n = 0; n < pairs; n++) {
        published.push((await publish("a", { bucket: n % 10 })).id, (await publish("b", { bucket: n % 10 }, other)).id);
      }
      const wide = { ...request, limit: 100_000, perListener: 100_000 };
      const first = await store.deliveries.claimDue(wide, clock.now());
      // Counted as the filters took them (not 80 a message), up to the message that brings them to FANOUT_ROWS.
      expect(first.claimed.length).toBe(FANOUT_ROWS);
      expect(first.nextDueAt).toBe(clock.now());
      const messages = [...new Set(first.claimed.map((c) => c.message.id))];
      expect(messages.sort()).toEqual(published.slice(0, FANOUT_ROWS / 4).sort());
      expect((await store.deliveries.claimDue(wide, clock.now())).claimed.length).toBe(pairs * 8 - FANOUT_ROWS);
    });

    test("a changed filter applies to messages published after it, even those still waiting for their fan-out", async () => {
      const l = await listener("l", { filter: { names: ["old"] } });
      const before = [await publish("old", {}), await publish("new", {})];
      await store.listeners.update(org, queue.id, l.id, { filter: { names: ["new"] } }, clock.now(), actor);
      const after = [await publish("old", {}), await publish("new", {})];
      await store.listeners.update(org, queue.id, l.id, { filter: null }, clock.now(), actor);
      const last = await publish("other", {});
      expect(await routes([...before, ...after, last].map((x) => x.id))).toEqual([[l.id], [], [], [l.id], [l.id]]);
      expect((await store.listeners.get(org, queue.id, l.id)).filter).toBeNull();
    });

    test("redeliver takes only listeners the message went to; a filtered-out one is refused", async () => {
      const all = await listener("all");
      const none = await listener("none", { filter: { names: ["never"] } });
      const m = await publish("x", {});
      const claimed = await claim();
      await store.deliveries.complete(claimed.map((c) => completion(c, { state: "acknowledged" }, clock.now())), clock.now());
      await expect(store.messages.redeliver(org, queue.id, m.id, [none.id], clock.now(), actor)).rejects.toMatchObject({ status: 422 });
      expect(await store.messages.redeliver(org, queue.id, m.id, null, clock.now(), actor)).toBe(1);
      expect((await claim()).map((c) => c.listener.id)).toEqual([all.id]);
    });

    test("a message for one listener goes to it alone, whatever its filter", async () => {
      const a = await listener("a", { filter: { names: ["never"] } });
      await listener("b");
      const m = await store.messages.publish(org, queue.id, { name: "fanout.test", data: "{}", listenerId: a.id }, clock.now(), actor);
      expect((await store.messages.deliveries(org, queue.id, m.id)).map((d) => d.listenerId)).toEqual([a.id]);
      expect(await routes([m.id])).toEqual([[a.id]]);
      await expect(store.messages.publish(org, queue.id, { name: "fanout.test", data: "{}", listenerId: "lst_none" }, clock.now(), actor))
        .rejects.toMatchObject({ status: 404 });
    });

    test("headers travel with each claimed delivery and probe; settings read back as saved", async () => {
      const l = await listener("h", { headers: { Authorization: "Bearer t0ken" }, rateLimit: 20, concurrency: 4, ordering: "unordered" });
      expect(l).toMatchObject({ headers: { Authorization: "Bearer t0ken" }, rateLimit: 20, concurrency: 4, ordering: "unordered", filter: null });
      await publish("x", {});
      const [c] = await claim();
      expect(c!.listener.headers).toEqual({ Authorization: "Bearer t0ken" });
      const probes = await store.deliveries.claimProbes(10, 1000, clock.now());
      expect(probes.find((p) => p.id === l.id)?.headers).toEqual({ Authorization: "Bearer t0ken" });
      const changed = await store.listeners.update(org, queue.id, l.id, { headers: null, rateLimit: null, concurrency: null }, clock.now(), actor);
      expect(changed).toMatchObject({ headers: null, rateLimit: null, concurrency: null });
    });

    test("the worker records message_missed, listener_disabled and listener_state_changed", async () => {
      const l = await listener("l");
      const m = await publish("x", {});
      const [c] = await claim();
      clock.advance(10);
      await store.deliveries.complete([completion(c!, { state: "missed" }, clock.now(), 500)], clock.now());
      const m2 = await publish("y", {});
      const [c2] = await claim();
      await store.deliveries.complete([completion(c2!, { state: "gone" }, clock.now(), 410)], clock.now());
      const [probe] = await store.deliveries.claimProbes(10, 1000, clock.now());
      await store.deliveries.recordProbe({ seq: probe!.seq, previous: "pending", ok: true, state: "stable", failuresInRow: 0, nextProbeAt: clock.now() + 1000 }, clock.now());
      const events = await store.events.list(org, { prefix: null, after: null, limit: 100, since: 0 });
      const ops = events.filter((e) => ["message_missed", "listener_disabled", "listener_state_changed"].includes(e.type));
      const ref = { id: l.id, name: "l" };
      expect(ops.map((e) => ({ type: e.type, listener: e.listener, message: e.message?.id ?? null, details: e.details, apiKey: e.apiKey }))).toEqual([
        { type: "message_missed", listener: ref, message: m.id, details: null, apiKey: null },
        { type: "listener_disabled", listener: ref, message: m2.id, details: { status: 410 }, apiKey: null },
        { type: "listener_state_changed", listener: ref, message: null, details: { from: "pending", to: "stable" }, apiKey: null },
      ]);
    });

    test("usage events but message_added go to the events queue, filtered, and never about its own messages", async () => {
      const events = await store.queues.create(org, { name: "events", schema: null, schemaId: null }, clock.now(), actor);
      await store.orgs.update(org, { eventsQueueId: events.id }, clock.now(), actor);
      expect((await store.orgs.get(org)).eventsQueueId).toBe(events.id);
      const ops = await listener("ops", { filter: { names: ["listener_*", "message_missed"] } }, events);
      const watched = await listener("watched");
      await publish("x", {});
      const first = await claim();
      const toWatched = first.find((c) => c.listener.id === watched.id)!;
      await store.deliveries.complete([completion(toWatched, { state: "missed" }, clock.now(), 500)], clock.now());
      const mirrored = [...first, ...await claim()].filter((c) => c.listener.id === ops.id);
      // Both listeners' listener_added (made in the transaction that created `ops`, after it) and the missed
      // delivery; not queue_added, api_client_updated or message_added, which its filter or the rule leave out.
      expect(mirrored.map((c) => [c.message.name, JSON.parse(c.message.data).listener?.id])).toEqual([
        ["listener_added", ops.id], ["listener_added", watched.id], ["message_missed", watched.id],
      ]);
      const data = JSON.parse(mirrored[2]!.message.data);
      expect(data).toMatchObject({ type: "message_missed", client: { id: org }, listener: { id: watched.id, name: "watched" }, api_key: null });
      // The events queue's own delivery missed: its message_missed is not published there again.
      await store.deliveries.complete(mirrored.map((c) => completion(c, { state: "missed" }, clock.now(), 500)), clock.now());
      expect((await claim()).filter((c) => c.listener.id === ops.id)).toEqual([]);
      const types = (await store.events.list(org, { prefix: "message_missed", after: null, limit: 100, since: 0 })).map((e) => e.queue?.id);
      expect(types).toEqual([queue.id, events.id, events.id, events.id]);
      // Deleting the events queue clears the setting.
      await store.queues.delete(org, events.id, clock.now(), actor);
      expect((await store.orgs.get(org)).eventsQueueId).toBeNull();
      await expect(store.orgs.update(org, { eventsQueueId: "q_unknown" }, clock.now(), actor)).rejects.toMatchObject({ status: 422 });
    });
  });
}
