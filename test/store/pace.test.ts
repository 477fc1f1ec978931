/**
 * Conformance: each listener's pace and order in the claim (docs/delivery.md, "Pace and order"): its own
 * concurrency, a rate limit's start slots, and a FIFO line that lets one delivery go at a time, in message order.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import { holdOf, type ClaimedDelivery, type ClaimRequest, type Completion, type Settlement } from "../../src/store/deliveries.ts";
import type { Actor, Listener, ListenerInput, Queue, Store } from "../../src/store/index.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const base: ClaimRequest = { owner: "w1", leaseMs: 60_000, limit: 500, perListener: 64, holdPerRequest: 4, busy: new Map() };

function completion(c: ClaimedDelivery, next: Settlement, at: number): Completion {
  return {
    id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, attempt: c.attempt + 1, next,
    record: { attemptedAt: at, statusCode: next.state === "acknowledged" ? 200 : 500, durationMs: 1, error: null, response: null },
  };
}

test("a listener's hold: one for FIFO, its concurrency's rounds, two seconds of a rate", () => {
  const req = { perListener: 64, holdPerRequest: 4 };
  expect(holdOf({ concurrency: null, rateLimit: null, fifo: false }, req)).toBe(64);
  expect(holdOf({ concurrency: 2, rateLimit: null, fifo: false }, req)).toBe(8);
  expect(holdOf({ concurrency: null, rateLimit: 10, fifo: false }, req)).toBe(20);
  expect(holdOf({ concurrency: null, rateLimit: 1000, fifo: false }, req)).toBe(64);
  expect(holdOf({ concurrency: 1, rateLimit: null, fifo: true }, req)).toBe(1);
});

for (const backend of storeBackends()) {
  describe(`${backend.name} store: pace and order`, () => {
    let store: Store;
    let org: string;
    let queue: Queue;
    const clock = manualClock();
    const listener = (name: string, settings: Partial<ListenerInput> = {}) =>
      store.listeners.create(org, queue.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: "http://127.0.0.1/l", secret: "s", ...settings },
        clock.now(), actor);
    const publish = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push((await store.messages.publish(org, queue.id, { name: `m${i}`, data: String(i) }, clock.now(), actor)).id);
      return ids;
    };
    /** Claims with what the caller holds counted, as the worker does. */
    const claim = async (held: ClaimedDelivery[] = [], over: Partial<ClaimRequest> = {}) => {
      const busy = new Map<number, number>();
      for (const c of held) busy.set(c.listener.seq, (busy.get(c.listener.seq) ?? 0) + 1);
      return (await store.deliveries.claimDue({ ...base, busy, ...over }, clock.now())).claimed;
    };
    const settle = (rows: ClaimedDelivery[], next: Settlement) =>
      store.deliveries.complete(rows.map((c) => completion(c, next, clock.now())), clock.now());
    const of = (l: Listener, rows: ClaimedDelivery[]) => rows.filter((c) => c.listener.id === l.id);

    beforeEach(async () => {
      clock.set(1_700_000_000_000);
      store = await backend.open();
      org = (await store.orgs.create("com.example.pace", clock.now())).id;
      queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, clock.now(), actor);
    });
    afterEach(async () => store.close());

    test("a listener's concurrency bounds what a claim gives it; its settings come with each row", async () => {
      const two = await listener("two", { concurrency: 2 });
      const free = await listener("free");
      await publish(20);
      const rows = await claim();
      expect(of(two, rows)).toHaveLength(8);
      expect(of(free, rows)).toHaveLength(20);
      expect(of(two, rows)[0]!.listener).toMatchObject({ concurrency: 2, rateLimit: null, fifo: false });
      expect(of(two, await claim(rows))).toEqual([]);
    });

    test("a rate-limited listener's rows come with start slots 1000 / rate ms apart, across claims", async () => {
      const paced = await listener("paced", { rateLimit: 10 });
      await publish(30);
      const first = await claim();
      expect(first).toHaveLength(20);
      const now = clock.now();
      expect(first.map((c) => c.startAt)).toEqual(first.map((_, i) => now + i * 100));
      await settle(first, { state: "acknowledged" });
      // Its slots reach two seconds ahead: nothing more until time moves, then the slots that fit go on from there.
      expect(await claim()).toEqual([]);
      clock.advance(1000);
      const second = await claim();
      expect(second.map((c) => c.startAt)).toEqual(Array.from({ length: 10 }, (_, i) => now + (20 + i) * 100));
      expect(of(paced, second)[0]!.listener.rateLimit).toBe(10);
    });

    test("a FIFO listener gets its head alone, the next once the head is final, a failed head again before the rest", async () => {
      const line = await listener("line", { ordering: "fifo" });
      const other = await listener("other");
      const ids = await publish(4);
      const first = await claim();
      expect(of(line, first).map((c) => c.message.id)).toEqual([ids[0]]);
      expect(of(other, first)).toHaveLength(4);
      // The head in flight: nothing behind it may go, even with nothing counted as held.
      expect(of(line, await claim())).toEqual([]);
      await settle(of(line, first), { state: "pending", at: clock.now() + 1000 });
      expect(of(line, await claim())).toEqual([]); // the head waits for its retry; the rest wait for it
      clock.advance(1000);
      const retried = of(line, await claim());
      expect(retried.map((c) => c.message.id)).toEqual([ids[0]]);
      await settle(retried, { state: "acknowledged" });
      const next = of(line, await claim());
      expect(next.map((c) => c.message.id)).toEqual([ids[1]]);
      await settle(next, { state: "missed" });
      expect(of(line, await claim()).map((c) => c.message.id)).toEqual([ids[2]]);
    });

    test("a redelivered message joins the line in message order, behind the one in flight", async () => {
      const line = await listener("line", { ordering: "fifo" });
      const ids = await publish(4);
      for (let i = 0; i < 2; i++) await settle(await claim(), { state: "acknowledged" });
      const inFlight = await claim(); // the third
      expect(inFlight.map((c) => c.message.id)).toEqual([ids[2]]);
      expect(await store.messages.redeliver(org, queue.id, ids[0]!, [line.id], clock.now(), actor)).toBe(1);
      expect(await claim()).toEqual([]);
      await settle(inFlight, { state: "acknowledged" });
      expect((await claim()).map((c) => c.message.id)).toEqual([ids[0]]);
      const line2 = (await store.listeners.get(org, queue.id, line.id)).line;
      expect(line2).toMatchObject({ head: { messageId: ids[0], state: "sending" }, waiting: 1 });
    });

    test("turning FIFO on lines up the deliveries not yet started; off lets them go together", async () => {
      const l = await listener("l");
      await publish(5);
      await store.listeners.update(org, queue.id, l.id, { ordering: "fifo" }, clock.now(), actor);
      const one = await claim();
      expect(one).toHaveLength(1);
      await store.listeners.update(org, queue.id, l.id, { ordering: "unordered" }, clock.now(), actor);
      expect(await claim(one)).toHaveLength(4);
    });

    test("a down FIFO listener's rows are all held, and after it comes back only the head goes", async () => {
      const l = await listener("l", { ordering: "fifo" });
      const ids = await publish(3);
      const [probe] = await store.deliveries.claimProbes(10, 1000, clock.now());
      await store.deliveries.recordProbe({ seq: probe!.seq, ok: false, state: "down", failuresInRow: 3, nextProbeAt: clock.now() + 1000 }, clock.now());
      const held = await claim();
      expect(held.map((c) => c.listener.held)).toEqual([true, true, true]);
      await store.deliveries.hold(held, clock.now());
      expect(await claim()).toEqual([]);
      await store.deliveries.recordProbe({ seq: probe!.seq, ok: true, state: "stable", failuresInRow: 0, nextProbeAt: clock.now() + 1000 }, clock.now());
      expect(await store.deliveries.resume(probe!.seq, 100, clock.now())).toBe(3);
      expect((await claim()).map((c) => c.message.id)).toEqual([ids[0]]);
      expect((await store.listeners.get(org, queue.id, l.id)).line?.waiting).toBe(2);
    });
  });
}
