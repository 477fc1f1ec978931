/** Conformance: organizations, keys, queues, listeners and messages, scoped to their organization. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import type { Actor, Store } from "../../src/store/index.ts";
import { AppError } from "../../src/lib/errors.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const status = async (p: Promise<unknown>) => p.then(() => 200, (e) => (e instanceof AppError ? e.status : 500));

for (const backend of storeBackends()) {
  describe(`${backend.name} store`, () => {
    let store: Store;
    let a: string;
    let b: string;
    beforeEach(async () => {
      store = await backend.open();
      a = (await store.orgs.create("com.example.a", 1000)).id;
      b = (await store.orgs.create("com.example.b", 1000)).id;
    });
    afterEach(async () => store.close());

    test("organization names are unique", async () => {
      expect(await status(store.orgs.create("com.example.a", 1))).toBe(409);
      expect((await store.orgs.list()).map((o) => o.name)).toEqual(["com.example.a", "com.example.b"]);
    });

    test("an organization and its owner key are made together, or not at all", async () => {
      const owner = { name: "owner", status: "enabled" as const, scopes: [], hash: "owner-hash", owner: true };
      const org = await store.orgs.create("com.example.c", 1500, owner);
      expect((await store.apiKeys.authenticate("owner-hash"))?.orgId).toBe(org.id);
      expect(await status(store.orgs.create("com.example.c", 1600, { ...owner, hash: "second-hash" }))).toBe(409);
      expect(await store.apiKeys.authenticate("second-hash")).toBeNull();
    });

    test("a publish committed with others sees a queue change made before it in the same batch", async () => {
      const q = await store.queues.create(a, { name: "typed", schema: { n: { type: "number" } }, schemaId: "s1" }, 2000, actor);
      const publish = (schemaId: string, now: number) => store.messages.publish(a, q.id, { name: null, data: "{}", schemaId }, now, actor);
      // Started in one turn, so one transaction: the queue is read, changed, read again, then deleted.
      const outcomes = [
        publish("s1", 2001),
        store.queues.update(a, q.id, { name: "typed", schema: { n: { type: "string" } }, schemaId: "s2" }, 2002, actor),
        publish("s1", 2003),
        publish("s2", 2004),
        store.queues.delete(a, q.id, 2005, actor),
        publish("s2", 2006),
      ].map(status);
      expect(await Promise.all(outcomes)).toEqual([200, 200, 409, 200, 200, 404]);
    });

    test("an id holding U+0000 names nothing: 404, an empty list, and publishes beside it are stored", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      const odd = "q_\u0000";
      expect(await status(store.queues.get(a, odd))).toBe(404);
      expect(await status(store.listeners.get(a, q.id, odd))).toBe(404);
      expect(await status(store.messages.get(a, q.id, odd))).toBe(404);
      expect(await status(store.apiKeys.get(a, odd))).toBe(404);
      expect(await status(store.orgs.get(odd))).toBe(404);
      expect((await store.queues.list(a, [odd], { offset: 0, limit: 10 })).total).toBe(0);
      expect(await store.events.list(a, { prefix: null, after: { storedAt: 0, id: odd }, limit: 10, since: 0 })).toHaveLength(1);
      // Started in one turn, so one batch: the odd one is refused alone.
      const outcomes = [store.messages.publish(a, odd, { name: null, data: "1" }, 2001, actor), store.messages.publish(a, q.id, { name: null, data: "2" }, 2001, actor)];
      expect(await Promise.all(outcomes.map(status))).toEqual([404, 200]);
    });

    test("rows of one organization are invisible to another", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      expect(await status(store.queues.get(b, q.id))).toBe(404);
      expect(await status(store.queues.delete(b, q.id, 2001, actor))).toBe(404);
      expect((await store.queues.list(b, "all", { offset: 0, limit: 10 })).total).toBe(0);
      const l = await store.listeners.create(a, q.id, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "whsec_x" }, 2002, actor);
      expect(await status(store.listeners.get(b, q.id, l.id))).toBe(404);
      const m = await store.messages.publish(a, q.id, { name: null, data: "1" }, 2003, actor);
      expect(await status(store.messages.get(b, q.id, m.id))).toBe(404);
      expect((await store.messages.list(b, { visible: "all" }, { offset: 0, limit: 10 })).total).toBe(0);
      expect(await status(store.queues.create(b, { name: "q", schema: null, schemaId: null }, 2004, actor))).toBe(200);
    });

    test("publishing fans out to the listeners that exist at that moment, in the same transaction", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      const l1 = await store.listeners.create(a, q.id, { name: "one", notifyUrl: "http://127.0.0.1/1", livenessUrl: "http://127.0.0.1/1", secret: "whsec_x" }, 2001, actor);
      const m1 = await store.messages.publish(a, q.id, { name: "first", data: '{"n":1}' }, 2002, actor);
      await store.listeners.create(a, q.id, { name: "two", notifyUrl: "http://127.0.0.1/2", livenessUrl: "http://127.0.0.1/2", secret: "whsec_y" }, 2003, actor);
      const m2 = await store.messages.publish(a, q.id, { name: null, data: "[1,2]" }, 2004, actor);
      expect((await store.messages.deliveries(a, q.id, m1.id)).map((d) => d.listenerId)).toEqual([l1.id]);
      expect((await store.messages.deliveries(a, q.id, m2.id)).map((d) => d.listenerName)).toEqual(["one", "two"]);
      expect((await store.messages.get(a, q.id, m1.id)).data).toEqual({ n: 1 });
    });

    test("publishing refuses data checked against a schema the queue no longer has", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      await store.queues.update(a, q.id, { name: "q", schema: { n: { type: "number" } }, schemaId: "s1" }, 2001, actor);
      expect(await status(store.messages.publish(a, q.id, { name: null, data: "1", schemaId: null }, 2002, actor))).toBe(409);
      expect((await store.messages.list(a, { visible: "all" }, { offset: 0, limit: 10 })).total).toBe(0);
      expect(await status(store.messages.publish(a, q.id, { name: null, data: '{"n":1}', schemaId: "s1" }, 2003, actor))).toBe(200);
    });

    test("deleting a queue removes its listeners and messages", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      const l = await store.listeners.create(a, q.id, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "whsec_x" }, 2001, actor);
      await store.messages.publish(a, q.id, { name: null, data: "1" }, 2002, actor);
      await store.queues.delete(a, q.id, 2003, actor);
      expect(await status(store.listeners.get(a, q.id, l.id))).toBe(404);
      expect((await store.messages.list(a, { visible: "all" }, { offset: 0, limit: 10 })).total).toBe(0);
      expect((await store.listeners.list(a, { visible: "all" }, { offset: 0, limit: 10 })).total).toBe(0);
    });

    test("duplicate names are refused and change nothing, and record no event", async () => {
      const q = await store.queues.create(a, { name: "q", schema: null, schemaId: null }, 2000, actor);
      await store.queues.create(a, { name: "r", schema: null, schemaId: null }, 2001, actor);
      expect(await status(store.queues.update(a, q.id, { name: "r", schema: null, schemaId: null }, 2002, actor))).toBe(409);
      expect((await store.queues.get(a, q.id)).name).toBe("q");
      const events = await store.events.list(a, { prefix: null, after: null, limit: 100, since: 0 });
      expect(events.map((e) => e.type)).toEqual(["queue_added", "queue_added"]);
    });

    test("lists are filtered to visible ids and paged in insertion order", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await store.queues.create(a, { name: `q${i}`, schema: null, schemaId: null }, 2000 + i, actor)).id);
      const page = await store.queues.list(a, "all", { offset: 2, limit: 2 });
      expect(page).toMatchObject({ total: 5, items: [{ id: ids[2] }, { id: ids[3] }] });
      const some = await store.queues.list(a, [ids[1], ids[4]], { offset: 0, limit: 10 });
      expect(some.items.map((q) => q.id)).toEqual([ids[1], ids[4]]);
      expect((await store.queues.list(a, [], { offset: 0, limit: 10 })).total).toBe(0);
    });

    test("api keys are found by hash, scoped to their organization", async () => {
      const key = await store.apiKeys.create(a, { name: "k", status: "enabled", scopes: [], hash: "h1", owner: false }, 2000, actor);
      expect((await store.apiKeys.authenticate("h1"))?.id).toBe(key.id);
      expect(await store.apiKeys.authenticate("nope")).toBeNull();
      expect(await status(store.apiKeys.get(b, key.id))).toBe(404);
      await store.apiKeys.update(a, key.id, { status: "disabled" }, 2001, actor);
      expect((await store.apiKeys.authenticate("h1"))?.status).toBe("disabled");
    });
  });
}
