/**
 * Conformance: portal sessions (docs/portal.md) and a listener's own list of deliveries. A session names its queue's
 * listeners or all of them, a listener made through it joins it, revoking keeps the row, the sweep removes ended
 * rows, and every change records its usage event with the session, not a key, as the actor of a portal's writes;
 * and what the portal reads beside: a listener's deliveries, and the messages some listeners received.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import { AppError } from "../../src/lib/errors.ts";
import type { Actor, NewPortalSession, Queue, Store } from "../../src/store/index.ts";
import type { ClaimedDelivery, ClaimRequest, Completion, Settlement } from "../../src/store/deliveries.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const request: ClaimRequest = { owner: "w1", leaseMs: 10_000, limit: 500, perListener: 500, busy: new Map() };
const failure = async (p: Promise<unknown>) => p.then(() => null, (e) => (e instanceof AppError ? { status: e.status, errors: e.errors } : e));
const page = { offset: 0, limit: 100 };

function completion(c: ClaimedDelivery, next: Settlement, at: number, status: number): Completion {
  return {
    id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, attempt: c.attempt + 1, next,
    record: { attemptedAt: at, statusCode: status, durationMs: 5, error: null, response: "ok" },
  };
}

for (const backend of storeBackends()) {
  describe(`${backend.name} store: portal sessions`, () => {
    let store: Store;
    let org: string;
    let other: string;
    let queue: Queue;
    const clock = manualClock();
    const listener = (name: string, by: Actor = actor, q = queue) =>
      store.listeners.create(org, q.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/up`, secret: "s" }, clock.now(), by);
    const session = (fields: Partial<NewPortalSession> = {}, hash = `hash-${crypto.randomUUID()}`) =>
      store.portalSessions.create(org, {
        queueId: queue.id, listenerIds: null, canManage: true, allowedOrigins: [], branding: { name: null, logoUrl: null, accent: null },
        returnUrl: null, expiresAt: clock.now() + 3_600_000, tokenHash: hash, ...fields,
      }, clock.now(), actor);
    const events = async () => (await store.events.list(org, { prefix: null, after: null, limit: 100, since: 0 })).filter((e) => e.type.startsWith("portal_") || e.type === "listener_added");

    beforeEach(async () => {
      store = await backend.open();
      org = (await store.orgs.create("com.example.portal", clock.now())).id;
      other = (await store.orgs.create("com.example.other", clock.now())).id;
      queue = await store.queues.create(org, { name: "orders", schema: null, schemaId: null }, clock.now(), actor);
    });
    afterEach(async () => store.close());

    test("a session is stored with every field, found by its token's hash and by its id, and records its event", async () => {
      const a = await listener("a");
      const made = await session({
        listenerIds: [a.id], canManage: false, allowedOrigins: ["https://app.example.com"], returnUrl: "https://app.example.com/back",
        branding: { name: "Acme", logoUrl: "https://cdn.example.com/logo.png", accent: "#112233" },
      }, "the-hash");
      expect(made).toMatchObject({
        orgId: org, queueId: queue.id, queueName: "orders", listenerIds: [a.id], canManage: false, allowedOrigins: ["https://app.example.com"],
        branding: { name: "Acme", logoUrl: "https://cdn.example.com/logo.png", accent: "#112233" }, returnUrl: "https://app.example.com/back",
        createdAt: clock.now(), expiresAt: clock.now() + 3_600_000, revokedAt: null,
      });
      expect(await store.portalSessions.authenticate("the-hash")).toEqual(made);
      expect(await store.portalSessions.find(made.id)).toEqual(made);
      expect(await store.portalSessions.get(org, made.id)).toEqual(made);
      expect(await store.portalSessions.authenticate("another-hash")).toBeNull();
      expect(await store.portalSessions.find("ps_none")).toBeNull();
      const [added] = (await events()).filter((e) => e.type === "portal_session_added");
      expect(added).toMatchObject({ apiKey: { id: "key_test", name: "test" }, queue: { id: queue.id, name: "orders" }, portalSession: { id: made.id } });
    });

    test("listener ids must be listeners of the queue: 422 naming each, nothing stored", async () => {
      const a = await listener("a");
      const elsewhere = await store.queues.create(org, { name: "elsewhere", schema: null, schemaId: null }, clock.now(), actor);
      const b = await listener("b", actor, elsewhere);
      expect(await failure(session({ listenerIds: [a.id, b.id, "lst_none"] }))).toEqual({
        status: 422,
        errors: [{ path: "/listener_ids/1", message: "is not a listener of the queue" }, { path: "/listener_ids/2", message: "is not a listener of the queue" }],
      });
      expect(await failure(session({ queueId: "q_none" }))).toMatchObject({ status: 404 });
      expect((await store.portalSessions.list(org, "all", page)).total).toBe(0);
      expect((await events()).filter((e) => e.type === "portal_session_added")).toEqual([]);
    });

    test("another organization sees none of them", async () => {
      const made = await session();
      expect(await failure(store.portalSessions.get(other, made.id))).toMatchObject({ status: 404 });
      expect(await failure(store.portalSessions.revoke(other, made.id, clock.now(), actor))).toMatchObject({ status: 404 });
      expect((await store.portalSessions.list(other, "all", page)).total).toBe(0);
      expect(await failure(store.portalSessions.create(other, { ...made, tokenHash: "h" }, clock.now(), actor))).toMatchObject({ status: 404 });
    });

    test("a listener made through a session joins it; a deleted one leaves it; a session of all listeners lists none", async () => {
      const a = await listener("a");
      const named = await session({ listenerIds: [a.id] });
      const all = await session();
      const portal: Actor = { keyId: named.id, keyName: "portal session", portalSession: named.id };
      const made = await listener("made-in-portal", portal);
      expect((await store.portalSessions.get(org, named.id)).listenerIds).toEqual([a.id, made.id]);
      expect((await store.portalSessions.get(org, all.id)).listenerIds).toBeNull();
      await store.listeners.delete(org, queue.id, a.id, clock.now(), actor);
      expect((await store.portalSessions.get(org, named.id)).listenerIds).toEqual([made.id]);
      const [joined] = (await events()).filter((e) => e.type === "listener_added" && e.listener?.id === made.id);
      expect(joined).toMatchObject({ apiKey: null, portalSession: { id: named.id } });
    });

    test("lists are paged in creation order and filtered to the queues given", async () => {
      const elsewhere = await store.queues.create(org, { name: "elsewhere", schema: null, schemaId: null }, clock.now(), actor);
      const ids = [(await session()).id, (await session({ queueId: elsewhere.id })).id, (await session()).id];
      expect((await store.portalSessions.list(org, "all", { offset: 1, limit: 1 })).items.map((s) => s.id)).toEqual([ids[1]]);
      expect(await store.portalSessions.list(org, [queue.id], page)).toMatchObject({ total: 2, items: [{ id: ids[0] }, { id: ids[2] }] });
      expect((await store.portalSessions.list(org, [], page)).total).toBe(0);
    });

    test("revoking keeps the row, once: a second revoke changes and records nothing", async () => {
      const made = await session({}, "h1");
      clock.advance(1000);
      const revoked = await store.portalSessions.revoke(org, made.id, clock.now(), actor);
      expect(revoked.revokedAt).toBe(clock.now());
      clock.advance(1000);
      expect((await store.portalSessions.revoke(org, made.id, clock.now(), actor)).revokedAt).toBe(revoked.revokedAt);
      expect((await store.portalSessions.authenticate("h1"))?.revokedAt).toBe(revoked.revokedAt);
      const deleted = (await events()).filter((e) => e.type === "portal_session_deleted");
      expect(deleted).toHaveLength(1);
      expect(deleted[0]).toMatchObject({ apiKey: { id: "key_test" }, queue: { id: queue.id }, portalSession: { id: made.id } });
    });

    test("the sweep deletes sessions that expired before the cut-off, and deleting the queue deletes its sessions", async () => {
      const early = await session({ expiresAt: clock.now() + 60_000 });
      const late = await session({ expiresAt: clock.now() + 120_000 });
      expect(await store.portalSessions.sweep(clock.now() + 60_000)).toBe(0);
      expect(await store.portalSessions.sweep(clock.now() + 60_001)).toBe(1);
      expect(await store.portalSessions.find(early.id)).toBeNull();
      expect(await store.portalSessions.find(late.id)).not.toBeNull();
      await store.queues.delete(org, queue.id, clock.now(), actor);
      expect(await store.portalSessions.find(late.id)).toBeNull();
    });

    test("a listener's deliveries: newest message first, paged, with state, attempts and last status", async () => {
      const a = await listener("a");
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await store.messages.publish(org, queue.id, { name: `m${i}`, data: "{}" }, clock.now() + i, actor)).id);
      const claimed = (await store.deliveries.claimDue(request, clock.now() + 10)).claimed;
      expect(claimed).toHaveLength(3);
      const first = claimed.find((c) => c.message.id === ids[0])!;
      await store.deliveries.complete([completion(first, { state: "acknowledged" }, clock.now() + 20, 204)], clock.now() + 20);
      const listed = await store.listeners.deliveries(org, queue.id, a.id, { offset: 0, limit: 2 });
      expect(listed.total).toBe(3);
      expect(listed.items.map((d) => d.message.name)).toEqual(["m2", "m1"]);
      const last = await store.listeners.deliveries(org, queue.id, a.id, { offset: 2, limit: 2 });
      expect(last.items).toEqual([{
        message: { id: ids[0]!, name: "m0", createdAt: clock.now() }, state: "acknowledged", attempts: 1, nextAttemptAt: null,
        lastStatus: 204, lastError: null, cycle: 1, updatedAt: clock.now() + 20,
      }]);
      expect(await failure(store.listeners.deliveries(other, queue.id, a.id, page))).toMatchObject({ status: 404 });
    });

    test("the messages some listeners received: newest first, the queue's others left out", async () => {
      const [a, b] = [await listener("a"), await listener("b")];
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await store.messages.publish(org, queue.id, { name: `m${i}`, data: "{}" }, clock.now() + i, actor)).id);
      const onlyB = (await store.messages.publish(org, queue.id, { name: "to-b", data: "{}", listenerId: b.id }, clock.now() + 5, actor)).id;
      await store.deliveries.claimDue(request, clock.now() + 10); // SQLite fans out at the claim
      expect((await store.messages.received(org, queue.id, [a.id], 2)).map((m) => m.id)).toEqual([ids[2], ids[1]]);
      expect((await store.messages.received(org, queue.id, [a.id], 10)).map((m) => m.name)).toEqual(["m2", "m1", "m0"]);
      expect((await store.messages.received(org, queue.id, null, 10)).map((m) => m.id)).toEqual([onlyB, ids[2], ids[1], ids[0]]);
      expect(await store.messages.received(org, queue.id, [], 10)).toEqual([]);
      expect(await failure(store.messages.received(other, queue.id, [a.id], 10))).toMatchObject({ status: 404 });
    });
  });
}
