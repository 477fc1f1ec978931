/**
 * Conformance: usage events. Every write records exactly one event in its own transaction (a refused write
 * records none); listing is per organization, ascending by (storedAt, id), strictly after a cursor, within a
 * `since` bound; the sweep deletes what is older than its bound, in batches.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import type { Actor, EventQuery, Store, UsageEvent } from "../../src/store/index.ts";

const actor: Actor = { keyId: "key_caller", keyName: "caller" };
const DAY = 24 * 60 * 60 * 1000;
const T0 = 1_700_000_000_000;
const all = (q: Partial<EventQuery> = {}): EventQuery => ({ prefix: null, after: null, limit: 1000, since: 0, ...q });
const noSchema = { schema: null, schemaId: null };

for (const backend of storeBackends()) {
  describe(`${backend.name} store: events`, () => {
    let store: Store;
    let org: string;
    let other: string;
    beforeEach(async () => {
      store = await backend.open();
      org = (await store.orgs.create("com.example.a", T0)).id;
      other = (await store.orgs.create("com.example.b", T0)).id;
    });
    afterEach(async () => store.close());

    const list = (q?: Partial<EventQuery>, orgId = org) => store.events.list(orgId, all(q));

    test("each write records its event with the fields docs/delivery.md names", async () => {
      const owner = await store.apiKeys.create(org, { name: "owner", status: "enabled", scopes: [], hash: "h1", owner: true }, T0, null);
      const key = await store.apiKeys.create(org, { name: "k", status: "enabled", scopes: [], hash: "h2", owner: false }, T0 + 1, actor);
      await store.apiKeys.update(org, key.id, { name: "k2" }, T0 + 2, actor);
      await store.orgs.update(org, { name: "com.example.renamed" }, T0 + 3, actor);
      const q = await store.queues.create(org, { name: "q", ...noSchema }, T0 + 4, actor);
      await store.queues.update(org, q.id, { name: "q2", ...noSchema }, T0 + 5, actor);
      const l = await store.listeners.create(org, q.id, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "s" }, T0 + 6, actor);
      await store.listeners.update(org, q.id, l.id, { name: "l2" }, T0 + 7, actor);
      const m = await store.messages.publish(org, q.id, { name: "m", data: "1" }, T0 + 8, actor);
      await store.messages.rename(org, q.id, m.id, "m2", T0 + 9, actor);
      await store.messages.delete(org, q.id, m.id, T0 + 10, actor);
      await store.listeners.delete(org, q.id, l.id, T0 + 11, actor);
      await store.queues.delete(org, q.id, T0 + 12, actor);
      await store.apiKeys.delete(org, key.id, T0 + 13, actor);

      const events = await list();
      const caller = { id: actor.keyId, name: actor.keyName };
      const queue = { id: q.id, name: "q2" };
      const expected: Partial<UsageEvent>[] = [
        { type: "api_key_added", apiKey: { id: owner.id, name: "owner" }, queue: null, listener: null, message: null },
        { type: "api_key_added", apiKey: { id: key.id, name: "k" } },
        { type: "api_key_updated", apiKey: { id: key.id, name: "k2" } },
        { type: "api_client_updated", apiKey: caller, queue: null },
        { type: "queue_added", apiKey: caller, queue: { id: q.id, name: "q" }, listener: null, message: null },
        { type: "queue_updated", apiKey: caller, queue },
        { type: "listener_added", apiKey: caller, queue, listener: { id: l.id, name: "l" }, message: null },
        { type: "listener_updated", queue, listener: { id: l.id, name: "l2" } },
        { type: "message_added", apiKey: caller, queue, listener: null, message: { id: m.id, name: "m" } },
        { type: "message_updated", queue, message: { id: m.id, name: "m2" } },
        { type: "message_deleted", queue, message: { id: m.id, name: "m2" } },
        { type: "listener_deleted", queue, listener: { id: l.id, name: "l2" } },
        { type: "queue_deleted", apiKey: caller, queue },
        { type: "api_key_deleted", apiKey: { id: key.id, name: "k2" } },
      ];
      expect(events).toHaveLength(expected.length);
      events.forEach((e, i) => expect(e).toMatchObject({ ...expected[i], orgId: org, storedAt: T0 + i }));
    });

    test("a refused write records no event", async () => {
      await store.queues.create(org, { name: "q", ...noSchema }, T0, actor);
      await expect(store.queues.create(org, { name: "q", ...noSchema }, T0 + 1, actor)).rejects.toMatchObject({ status: 409 });
      await expect(store.queues.delete(org, "q_missing", T0 + 2, actor)).rejects.toMatchObject({ status: 404 });
      expect((await list()).map((e) => e.type)).toEqual(["queue_added"]);
    });

    test("filters by type prefix, exactly", async () => {
      const q = await store.queues.create(org, { name: "q", ...noSchema }, T0, actor);
      await store.messages.publish(org, q.id, { name: null, data: "1" }, T0 + 1, actor);
      await store.orgs.update(org, { name: "com.example.c" }, T0 + 2, actor);
      expect((await list({ prefix: "queue_" })).map((e) => e.type)).toEqual(["queue_added"]);
      expect((await list({ prefix: "message_" })).map((e) => e.type)).toEqual(["message_added"]);
      // The prefix is compared as text: `%` and `_` are no wildcards, and api_client_updated is not an api_key_ event.
      expect(await list({ prefix: "api_key_" })).toEqual([]);
      expect(await list({ prefix: "queue%" })).toEqual([]);
    });

    test("pages strictly after (storedAt, id), without overlap or gap, also within one millisecond", async () => {
      // 25 events over 5 milliseconds, so several share a storedAt and order falls to the id.
      for (let i = 0; i < 25; i++) await store.queues.create(org, { name: `q${i}`, ...noSchema }, T0 + Math.floor(i / 5), actor);
      const everything = await list();
      const sorted = [...everything].sort((a, b) => a.storedAt - b.storedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      expect(everything.map((e) => e.id)).toEqual(sorted.map((e) => e.id));

      const seen: string[] = [];
      let after: EventQuery["after"] = null;
      for (let pages = 0; pages < 20; pages++) {
        const page = await list({ after, limit: 7 });
        seen.push(...page.map((e) => e.id));
        if (page.length < 7) break;
        const last = page.at(-1)!;
        after = { storedAt: last.storedAt, id: last.id };
      }
      expect(seen).toEqual(everything.map((e) => e.id));
    });

    test("keys grow in commit order, so a cursor never skips an event committed after it", async () => {
      // Within one millisecond, order is commit order.
      for (let i = 0; i < 10; i++) await store.queues.create(org, { name: `same-${i}`, ...noSchema }, T0, actor);
      expect((await list()).map((e) => e.queue?.name)).toEqual([...Array(10).keys()].map((i) => `same-${i}`));
      // A request that read the clock earlier but commits later still lands after the cursor.
      const page = await list();
      const last = page.at(-1)!;
      await store.queues.create(org, { name: "late", ...noSchema }, T0 - 5, actor);
      const after = await list({ after: { storedAt: last.storedAt, id: last.id } });
      expect(after.map((e) => e.queue?.name)).toEqual(["late"]);
      expect(after[0]!.storedAt).toBe(T0);
      // Another organization's clock is its own.
      await store.queues.create(other, { name: "early", ...noSchema }, T0 - 5, actor);
      expect((await list({}, other))[0]!.storedAt).toBe(T0 - 5);
    });

    test("returns nothing before `since`: the 24-hour cut-off", async () => {
      const now = T0 + 2 * DAY;
      await store.queues.create(org, { name: "old", ...noSchema }, now - DAY - 1, actor);
      await store.queues.create(org, { name: "edge", ...noSchema }, now - DAY, actor);
      await store.queues.create(org, { name: "new", ...noSchema }, now, actor);
      const names = (await list({ since: now - DAY })).map((e) => e.queue?.name);
      expect(names).toEqual(["edge", "new"]);
      // A cursor older than `since` does not bring old events back.
      const old = (await list())[0]!;
      expect((await list({ since: now - DAY, after: { storedAt: old.storedAt - 1, id: "" } })).map((e) => e.queue?.name)).toEqual(["edge", "new"]);
    });

    test("keeps organizations apart", async () => {
      await store.queues.create(org, { name: "mine", ...noSchema }, T0, actor);
      await store.queues.create(other, { name: "theirs", ...noSchema }, T0, actor);
      expect((await list()).map((e) => e.queue?.name)).toEqual(["mine"]);
      expect((await list({}, other)).map((e) => e.queue?.name)).toEqual(["theirs"]);
    });

    test("sweep deletes events before its bound, in every organization, however many", async () => {
      const q = await store.queues.create(org, { name: "q", ...noSchema }, T0, actor);
      await Promise.all(Array.from({ length: 4_500 }, () => store.messages.publish(org, q.id, { name: null, data: "1" }, T0 + 1, actor)));
      await store.queues.create(other, { name: "q", ...noSchema }, T0 + 1, actor);
      await store.queues.create(org, { name: "kept", ...noSchema }, T0 + 2, actor);
      expect(await store.events.sweep(T0 + 2)).toBe(4_502);
      expect((await list()).map((e) => e.queue?.name)).toEqual(["kept"]);
      expect(await list({}, other)).toEqual([]);
      expect(await store.events.sweep(T0 + 2)).toBe(0);
    });
  });
}
