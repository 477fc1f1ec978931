/**
 * Conformance: the storage of retention and the recovery tools: a 410 pauses its listener and holds the delivery;
 * redelivery and replay start new cycles; retention deletes final old messages only; Idempotency-Keys commit with
 * their write; a writable database passes the writability check. The end-to-end suite drives the same through the API.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import { AppError } from "../../src/lib/errors.ts";
import type { Actor, Listener, Queue, Store } from "../../src/store/index.ts";
import type { ClaimedDelivery, ClaimRequest, Settlement } from "../../src/store/deliveries.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const request: ClaimRequest = { owner: "w1", leaseMs: 10_000, limit: 100, perListener: 100, busy: new Map() };
const status = async (p: Promise<unknown>) => p.then(() => 200, (e) => (e instanceof AppError ? e.status : 500));

for (const backend of storeBackends()) {
  describe(`${backend.name} store: recovery`, () => {
    let store: Store;
    let org: string;
    let queue: Queue;
    const clock = manualClock();
    const listener = (name: string) =>
      store.listeners.create(org, queue.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/l`, secret: "whsec_x" }, clock.now(), actor);
    const publish = () => store.messages.publish(org, queue.id, { name: null, data: "1" }, clock.now(), actor);
    const claim = async () => (await store.deliveries.claimDue(request, clock.now())).claimed;
    const settle = (claimed: ClaimedDelivery[], next: Settlement, code = 200) =>
      store.deliveries.complete(claimed.map((c) => ({
        id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, attempt: c.attempt + 1, next,
        record: { attemptedAt: clock.now(), statusCode: code, durationMs: 1, error: null, response: null },
      })), clock.now());
    const deliveryOf = async (messageId: string, l: Listener) =>
      (await store.messages.deliveries(org, queue.id, messageId)).find((d) => d.listenerId === l.id)!;

    beforeEach(async () => {
      clock.set(1_700_000_000_000);
      store = await backend.open();
      org = (await store.orgs.create("com.example.r", clock.now())).id;
      queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, clock.now(), actor);
    });
    afterEach(async () => store.close());

    test("a 410 holds its delivery without a retry and pauses the listener; a paused listener's rows are held", async () => {
      const l = await listener("gone");
      const m = await publish();
      expect(await settle(await claim(), { state: "gone" }, 410)).toEqual([true]);
      expect(await deliveryOf(m.id, l)).toMatchObject({ state: "pending", attempts: 1, nextAttemptAt: null, lastStatus: 410 });
      expect((await store.listeners.get(org, queue.id, l.id)).enabled).toBe(false);
      const next = await publish();
      const [held] = await claim();
      expect(held).toMatchObject({ message: { id: next.id }, listener: { held: true } });
    });

    test("redelivery starts a new cycle of the deliveries named, due now, and refuses a listener the message did not go to", async () => {
      const a = await listener("a");
      const b = await listener("b");
      const m = await publish();
      await settle(await claim(), { state: "acknowledged" });
      const late = await listener("late");
      expect(await status(store.messages.redeliver(org, queue.id, m.id, [late.id], clock.now(), actor))).toBe(422);
      clock.advance(10);
      expect(await store.messages.redeliver(org, queue.id, m.id, [b.id], clock.now(), actor)).toBe(1);
      expect(await deliveryOf(m.id, a)).toMatchObject({ state: "acknowledged", cycle: 1 });
      expect(await deliveryOf(m.id, b)).toMatchObject({ state: "pending", cycle: 2, attempts: 0, nextAttemptAt: clock.now() });
      const [again] = await claim();
      expect(again).toMatchObject({ attempt: 0, listener: { id: b.id } });
      await settle([again!], { state: "acknowledged" });
      const attempts = await store.messages.attempts(org, queue.id, m.id);
      expect(attempts.filter((x) => x.listenerId === b.id).map((x) => x.cycle).sort()).toEqual([1, 2]);
    });

    test("a replay queues the final deliveries of its window, and the worker's chunks start them again", async () => {
      const l = await listener("r");
      const old = await publish();
      clock.advance(5_000);
      const since = clock.now();
      const missed = [await publish(), await publish()];
      const acked = await publish();
      const claimed = await claim();
      await settle(claimed.filter((c) => c.message.id !== acked.id), { state: "missed" }, 500);
      await settle(claimed.filter((c) => c.message.id === acked.id), { state: "acknowledged" });
      clock.advance(1_000);
      const window = { since, until: clock.now(), only: "missed" as const };
      expect(await store.listeners.replay(org, queue.id, l.id, window, clock.now(), actor)).toBe(2);
      for (;;) if (!(await store.deliveries.replayChunk(1, clock.now())).more) break;
      const states = await Promise.all([old, ...missed, acked].map(async (m) => (await deliveryOf(m.id, l)).state));
      expect(states).toEqual(["missed", "pending", "pending", "acknowledged"]);
      expect((await claim()).map((c) => c.message.id).sort()).toEqual(missed.map((m) => m.id).sort());
    });

    test("retention deletes the final messages made before its bound, oldest first, and keeps those still pending", async () => {
      const l = await listener("keep");
      const done = await publish();
      await settle(await claim(), { state: "acknowledged" });
      const waiting = await publish();
      clock.advance(1_000);
      const fresh = await publish();
      expect(await store.deliveries.deleteExpired(clock.now() - 500, 10)).toBe(1);
      const exists = (id: string) => status(store.messages.get(org, queue.id, id));
      expect([await exists(done.id), await exists(waiting.id), await exists(fresh.id)]).toEqual([404, 200, 200]);
      expect((await store.listeners.get(org, queue.id, l.id)).messages.acknowledgedCount).toBe(1);
    });

    test("an Idempotency-Key commits with the request's write, and the answer is stored once it is rendered", async () => {
      const claim = { keyHash: "k1", fingerprint: "f1", claimed: false };
      await store.messages.publish(org, queue.id, { name: null, data: "1" }, clock.now(), { ...actor, idempotency: claim });
      expect(claim.claimed).toBe(true);
      expect(await store.idempotency.find(org, "k1", 0)).toEqual({ fingerprint: "f1", response: null, createdAt: clock.now() });
      await store.idempotency.complete(org, claim, { status: 200, body: new TextEncoder().encode("{}") }, clock.now());
      const found = await store.idempotency.find(org, "k1", 0);
      expect({ status: found?.response?.status, body: new TextDecoder().decode(found?.response?.body) }).toEqual({ status: 200, body: "{}" });
      const queued = { keyHash: "k2", fingerprint: "f2", claimed: false };
      await store.queues.create(org, { name: "other", schema: null, schemaId: null }, clock.now(), { ...actor, idempotency: queued });
      expect(await store.idempotency.find(org, "k2", 0)).toMatchObject({ fingerprint: "f2", response: null });
      expect(await store.idempotency.find(org, "k2", clock.now() + 1)).toBeNull();
    });

    test("a writable database passes the writability check, the store's and the delivery store's (readiness, the outage probe)", async () => {
      await store.checkWritable(clock.now());
      await store.deliveries.checkWritable(clock.now() + 1);
      await store.checkWritable(clock.now() + 2); // a row rewritten, not added each time
    });
  });
}
