/** Conformance: the delivery worker's transitions (claim, lease, fencing, rescue, complete, hold, missed, probes). */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import type { Actor, Listener, Queue, Store } from "../../src/store/index.ts";
import { FANOUT_CHUNK, FANOUT_ROWS, type ClaimedDelivery, type ClaimRequest, type Completion, type Settlement } from "../../src/store/deliveries.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const LEASE = 10_000;
const noBusy = new Map<number, number>();
const request = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({ owner: "w1", leaseMs: LEASE, limit: 100, perListener: 100, busy: noBusy, ...over });

function completion(c: ClaimedDelivery, next: Settlement, at: number, status: number | null = 200): Completion {
  return {
    id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id, messageId: c.message.id, attempt: c.attempt + 1, next,
    record: { attemptedAt: at, statusCode: status, durationMs: 5, error: status === null ? "timeout" : null, response: "ok" },
  };
}

for (const backend of storeBackends()) {
  describe(`${backend.name} delivery store`, () => {
    let store: Store;
    let org: string;
    let queue: Queue;
    const clock = manualClock();
    const listener = (name: string, secret = `whsec_${btoa(name)}`) =>
      store.listeners.create(org, queue.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/live`, secret }, clock.now(), actor);
    const publish = (data = '{"n":1}', name: string | null = null) => store.messages.publish(org, queue.id, { name, data }, clock.now(), actor);
    const claim = async (over: Partial<ClaimRequest> = {}) => (await store.deliveries.claimDue(request(over), clock.now())).claimed;
    const stateOf = async (messageId: string) => (await store.messages.deliveries(org, queue.id, messageId))[0]!;
    const markDown = async (l: Listener) => {
      const [probe] = await store.deliveries.claimProbes(100, 1000, clock.now() + 1_000_000).then((ps) => ps.filter((p) => p.id === l.id));
      await store.deliveries.recordProbe({ seq: probe!.seq, ok: false, state: "down", failuresInRow: 3, nextProbeAt: clock.now() + 1000 }, clock.now());
      return probe!.seq;
    };

    beforeEach(async () => {
      clock.set(1_700_000_000_000);
      store = await backend.open();
      org = (await store.orgs.create("com.example.d", clock.now())).id;
      queue = await store.queues.create(org, { name: "orders", schema: null, schemaId: null }, clock.now(), actor);
    });
    afterEach(async () => store.close());

    test("a publish's deliveries are written by the next claim; until then they read as pending to the listeners its publish saw", async () => {
      const early = await listener("early");
      clock.advance(1);
      const m1 = await publish();
      clock.advance(1);
      const late = await listener("late"); // after m1's commit: m1 is not for it
      clock.advance(1);
      expect(await store.messages.deliveries(org, queue.id, m1.id)).toEqual([{
        listenerId: early.id, listenerName: "early", state: "pending", attempts: 0, nextAttemptAt: m1.createdAt,
        lastStatus: null, lastError: null, cycle: 1, updatedAt: m1.createdAt,
      }]);
      const m2 = await publish();
      const claimed = await claim();
      expect(claimed.map((c) => [c.message.id, c.listener.id])).toEqual([[m1.id, early.id], [m2.id, early.id], [m2.id, late.id]]);
      expect((await store.messages.deliveries(org, queue.id, m1.id)).map((d) => [d.listenerName, d.state])).toEqual([["early", "sending"]]);
      expect(await claim()).toEqual([]);
    });

    test("the seq of a deleted newest message is not given out again, so the next message still goes out", async () => {
      await listener("one");
      const m1 = await publish();
      expect((await claim()).map((c) => c.message.id)).toEqual([m1.id]);
      await store.messages.delete(org, queue.id, m1.id, clock.now(), actor);
      const m2 = await publish();
      expect((await claim()).map((c) => c.message.id)).toEqual([m2.id]);
    });

    test("a listener created after a message deleted before its fan-out still gets the next message", async () => {
      const early = await listener("early");
      const m1 = await publish();
      const late = await listener("late"); // after m1: its from_seq is m1's seq
      await store.messages.delete(org, queue.id, m1.id, clock.now(), actor); // m1's seq is the newest no more
      const m2 = await publish();
      const claimed = await claim();
      expect(claimed.map((c) => [c.message.id, c.listener.id])).toEqual([[m2.id, early.id], [m2.id, late.id]]);
    });

    test.if(backend.fansOutInClaims)("a backlog of messages is fanned out a slice at a time, the claim asking to be called again at once", async () => {
      await listener("one");
      await Promise.all(Array.from({ length: FANOUT_CHUNK + 5 }, () => publish()));
      const first = await store.deliveries.claimDue(request({ limit: 10_000, perListener: 10_000 }), clock.now());
      expect(first.claimed.length).toBe(FANOUT_CHUNK);
      expect(first.nextDueAt).toBe(clock.now());
      expect((await claim()).length).toBe(5);
    });

    test.if(backend.fansOutInClaims)("a burst to a queue with many listeners is fanned out a bounded number of deliveries at a time", async () => {
      const listeners = 7;
      for (let i = 0; i < listeners; i++) await listener(`l${i}`);
      const messages = Math.ceil(FANOUT_ROWS / listeners) + 10;
      await Promise.all(Array.from({ length: messages }, () => publish()));
      const wide = request({ limit: 100_000, perListener: 100_000 });
      const first = await store.deliveries.claimDue(wide, clock.now());
      // Up to the message holding the FANOUT_ROWS-th delivery, whole.
      expect(first.claimed.length).toBe(Math.ceil(FANOUT_ROWS / listeners) * listeners);
      expect(first.nextDueAt).toBe(clock.now());
      expect((await store.deliveries.claimDue(wide, clock.now())).claimed.length).toBe(messages * listeners - first.claimed.length);
    });

    test("a claim leases due deliveries oldest first with what is needed to send them", async () => {
      const l = await listener("one");
      clock.advance(1);
      const m1 = await publish('{"n":1}', "first");
      clock.advance(1);
      const m2 = await publish('"text"');
      const claimed = await claim();
      expect(claimed.map((c) => c.message.id)).toEqual([m1.id, m2.id]);
      expect(claimed[0]).toMatchObject({
        attempt: 0,
        listener: { id: l.id, notifyUrl: "http://127.0.0.1/one", secrets: ["whsec_b25l"], held: false },
        message: { id: m1.id, name: "first", queue: { id: queue.id, name: "orders" }, data: '{"n":1}', createdAt: m1.createdAt },
      });
      expect(claimed[1]!.message.data).toBe('"text"');
      expect((await stateOf(m1.id)).state).toBe("sending");
      expect(await claim()).toEqual([]);
    });

    test("a claim's rows of one message share its object, and its rows of one listener theirs (send.ts builds each once)", async () => {
      const [a, b] = [await listener("a"), await listener("b")];
      const [m1, m2] = [await publish('{"n":1}'), await publish('{"n":2}')];
      const claimed = await claim();
      const find = (m: string, l: string) => claimed.find((c) => c.message.id === m && c.listener.id === l)!;
      expect(claimed).toHaveLength(4);
      expect(find(m1.id, a.id).message).toBe(find(m1.id, b.id).message);
      expect(find(m1.id, a.id).message).not.toBe(find(m2.id, a.id).message);
      expect(find(m1.id, a.id).listener).toBe(find(m2.id, a.id).listener);
      expect(find(m1.id, a.id).listener).not.toBe(find(m1.id, b.id).listener);
      expect(find(m2.id, b.id).message.data).toBe('{"n":2}');
    });

    test("a claim respects its limit, the per-listener cap and what is already in flight", async () => {
      const a = await listener("a");
      await listener("b");
      for (let i = 0; i < 5; i++) await publish();
      const first = await claim({ limit: 3 });
      expect(first).toHaveLength(3);
      const seqA = first.find((c) => c.listener.id === a.id)!.listener.seq;
      const capped = await claim({ perListener: 2, busy: new Map([[seqA, 2]]) });
      expect(capped.every((c) => c.listener.id !== a.id)).toBe(true);
      expect(capped.length).toBe(2);
    });

    test("a capped listener with a large backlog does not starve another listener", async () => {
      await listener("slow");
      for (let i = 0; i < 80; i++) await publish();
      const otherQueue = await store.queues.create(org, { name: "other", schema: null, schemaId: null }, clock.now(), actor);
      const fast = await store.listeners.create(org, otherQueue.id, { name: "fast", notifyUrl: "http://127.0.0.1/f", livenessUrl: "http://127.0.0.1/f", secret: "whsec_Zg==" }, clock.now(), actor);
      clock.advance(1);
      await store.messages.publish(org, otherQueue.id, { name: null, data: "1" }, clock.now(), actor);
      const claimed = await claim({ limit: 4, perListener: 2 });
      expect(claimed.map((c) => c.listener.id).filter((id) => id === fast.id)).toHaveLength(1);
      expect(claimed).toHaveLength(3);
    });

    test("a claim larger than one read window takes the oldest due rows across windows, none twice", async () => {
      await listener("one");
      await listener("two");
      const ids: string[] = [];
      for (let i = 0; i < 90; i++) {
        clock.advance(1);
        ids.push((await publish()).id);
      }
      const claimed = await claim({ limit: 150, perListener: 100 });
      expect(claimed).toHaveLength(150);
      expect(new Set(claimed.map((c) => c.id)).size).toBe(150);
      // Oldest first, as chosen: each message's two deliveries in turn.
      expect(claimed.map((c) => c.message.id)).toEqual(ids.slice(0, 75).flatMap((id) => [id, id]));
      expect((await claim({ limit: 150, perListener: 100 })).length).toBe(30);
    });

    test("only due deliveries are claimed, and nextDueAt says when the next one is", async () => {
      await listener("one");
      const m = await publish();
      const [c] = await claim();
      expect(await store.deliveries.complete([completion(c!, { state: "pending", at: clock.now() + 5000 }, clock.now(), 500)], clock.now())).toEqual([true]);
      const early = await store.deliveries.claimDue(request(), clock.now());
      expect(early).toEqual({ claimed: [], nextDueAt: clock.now() + 5000 });
      expect(await stateOf(m.id)).toMatchObject({ state: "pending", attempts: 1, lastStatus: 500, nextAttemptAt: clock.now() + 5000 });
      clock.advance(5000);
      expect((await claim()).map((x) => x.attempt)).toEqual([1]);
    });

    test("a caller that steps again anyway may skip the next due time", async () => {
      await listener("one");
      await publish();
      const [c] = await claim();
      await store.deliveries.complete([completion(c!, { state: "pending", at: clock.now() + 5000 }, clock.now(), 500)], clock.now());
      expect(await store.deliveries.claimDue(request({ wantsNextDue: false }), clock.now())).toEqual({ claimed: [], nextDueAt: null });
      expect((await store.deliveries.claimDue(request(), clock.now())).nextDueAt).toBe(clock.now() + 5000);
    });

    test("an acknowledgement settles the delivery, counts on the listener and records the attempt", async () => {
      const l = await listener("one");
      const m = await publish();
      const [c] = await claim();
      clock.advance(7);
      expect(await store.deliveries.complete([completion(c!, { state: "acknowledged" }, clock.now() - 7)], clock.now())).toEqual([true]);
      expect(await stateOf(m.id)).toMatchObject({ state: "acknowledged", attempts: 1, lastStatus: 200, nextAttemptAt: null });
      expect((await store.listeners.get(org, queue.id, l.id)).messages).toEqual({ acknowledgedCount: 1, missed: [], missedCount: 0 });
      expect(await store.messages.attempts(org, queue.id, m.id)).toEqual([
        { listenerId: l.id, listenerName: "one", attempt: 1, cycle: 1, attemptedAt: clock.now() - 7, statusCode: 200, durationMs: 5, error: null, response: "ok" },
      ]);
      // The same completion again (a duplicate) changes nothing and counts nothing.
      expect(await store.deliveries.complete([completion(c!, { state: "acknowledged" }, clock.now())], clock.now())).toEqual([false]);
      expect((await store.listeners.get(org, queue.id, l.id)).messages.acknowledgedCount).toBe(1);
    });

    test("a response holding any character is recorded (PostgreSQL keeps U+0000 as U+FFFD)", async () => {
      await listener("one");
      const m = await publish();
      const [c] = await claim();
      const done = completion(c!, { state: "pending", at: clock.now() + 1000 }, clock.now(), 500);
      done.record.response = "a\u0000b\u{1F600}";
      done.record.error = "bad\u0000";
      expect(await store.deliveries.complete([done], clock.now())).toEqual([true]);
      const [attempt] = await store.messages.attempts(org, queue.id, m.id);
      expect(attempt!.response?.replaceAll("\uFFFD", "\u0000")).toBe("a\u0000b\u{1F600}");
      expect(attempt!.error?.replaceAll("\uFFFD", "\u0000")).toBe("bad\u0000");
    });

    test("completeAndClaim settles what came back and leases the next due rows in the same call", async () => {
      const l = await listener("one");
      const first = await publish();
      clock.advance(1);
      const second = await publish();
      const [c] = await claim({ limit: 1 });
      expect(c!.message.id).toBe(first.id);
      const step = await store.deliveries.completeAndClaim([completion(c!, { state: "acknowledged" }, clock.now())], request(), clock.now());
      expect(step.settled).toEqual([true]);
      expect(step.claimed.map((x) => x.message.id)).toEqual([second.id]);
      expect(await stateOf(first.id)).toMatchObject({ state: "acknowledged", attempts: 1 });
      expect((await store.listeners.get(org, queue.id, l.id)).messages.acknowledgedCount).toBe(1);
      // The same result again is fenced out, and with nothing due nothing is leased.
      const again = await store.deliveries.completeAndClaim([completion(c!, { state: "acknowledged" }, clock.now())], request(), clock.now());
      expect(again).toEqual({ settled: [false], claimed: [], nextDueAt: null });
      expect((await store.listeners.get(org, queue.id, l.id)).messages.acknowledgedCount).toBe(1);
    });

    test("acknowledgements settled together are each counted once on their listener", async () => {
      const a = await listener("a");
      const b = await listener("b");
      for (let i = 0; i < 3; i++) await publish();
      const claimed = await claim();
      expect(claimed).toHaveLength(6);
      const results = claimed.map((c) => completion(c, { state: "acknowledged" }, clock.now()));
      // One of them twice in the same batch: the second is fenced out and not counted.
      expect(await store.deliveries.complete([...results, results[0]!], clock.now())).toEqual([true, true, true, true, true, true, false]);
      expect((await store.listeners.get(org, queue.id, a.id)).messages.acknowledgedCount).toBe(3);
      expect((await store.listeners.get(org, queue.id, b.id)).messages.acknowledgedCount).toBe(3);
    });

    test("an expired lease is rescued, and the old lease holder is fenced out", async () => {
      const l = await listener("one");
      const m = await publish();
      const [old] = await claim();
      clock.advance(LEASE - 1);
      expect(await store.deliveries.rescueExpiredLeases(clock.now())).toBe(0);
      clock.advance(1);
      expect(await store.deliveries.rescueExpiredLeases(clock.now())).toBe(1);
      const [again] = await claim({ owner: "w1" });
      expect(again!.id).toBe(old!.id);
      expect(again!.token).not.toBe(old!.token);
      expect(await store.deliveries.complete([completion(old!, { state: "acknowledged" }, clock.now())], clock.now())).toEqual([false]);
      expect((await stateOf(m.id)).state).toBe("sending");
      expect(await store.deliveries.complete([completion(again!, { state: "acknowledged" }, clock.now())], clock.now())).toEqual([true]);
      expect((await store.listeners.get(org, queue.id, l.id)).messages.acknowledgedCount).toBe(1);
      expect(await store.messages.attempts(org, queue.id, m.id)).toHaveLength(1);
    });

    test("a missed delivery joins the listener's missed list, newest 100 kept", async () => {
      const l = await listener("one");
      const ids: string[] = [];
      for (let i = 0; i < 101; i++) ids.push((await publish()).id);
      const claimed = await claim({ limit: 200, perListener: 200 });
      const results = await store.deliveries.complete(claimed.map((c) => completion(c, { state: "missed" }, clock.now(), 503)), clock.now());
      expect(results.every(Boolean)).toBe(true);
      const got = await store.listeners.get(org, queue.id, l.id);
      expect(got.messages.missedCount).toBe(101);
      expect(got.messages.missed).toEqual(ids.slice(1));
      expect(await stateOf(ids[0]!)).toMatchObject({ state: "missed", attempts: 1, lastStatus: 503 });
    });

    test("completing a delivery whose message or listener was deleted meanwhile is harmless", async () => {
      const l = await listener("one");
      const keep = await listener("two");
      const m = await publish();
      const claimed = await claim();
      await store.messages.delete(org, queue.id, m.id, clock.now(), actor);
      expect(await store.deliveries.complete(claimed.map((c) => completion(c, { state: "acknowledged" }, clock.now())), clock.now())).toEqual([false, false]);
      const m2 = await publish();
      const again = await claim();
      await store.listeners.delete(org, queue.id, l.id, clock.now(), actor);
      const settled = await store.deliveries.complete(again.map((c) => completion(c, { state: "missed" }, clock.now())), clock.now());
      expect(settled).toEqual(again.map((c) => c.listener.id === keep.id));
      expect((await store.listeners.get(org, queue.id, keep.id)).messages.missed).toEqual([m2.id]);
    });

    test("deliveries to a down listener are held without using an attempt, resumed in chunks after a successful probe", async () => {
      const l = await listener("one");
      const seq = await markDown(l);
      const m = await publish();
      await publish();
      await publish();
      const claimed = await claim();
      expect(claimed.map((c) => c.listener.held)).toEqual([true, true, true]);
      expect(await store.deliveries.hold(claimed, clock.now())).toEqual([true, true, true]);
      expect(await stateOf(m.id)).toMatchObject({ state: "pending", attempts: 0, nextAttemptAt: null });
      clock.advance(60_000);
      expect(await claim()).toEqual([]);
      const probe = { seq, ok: true, state: "stable" as const, failuresInRow: 0, nextProbeAt: clock.now() + 1000 };
      expect(await store.deliveries.recordProbe(probe, clock.now())).toBe(true);
      expect(await store.deliveries.resume(seq, 2, clock.now())).toBe(2);
      expect(await store.deliveries.resume(seq, 2, clock.now())).toBe(1);
      expect(await store.deliveries.resume(seq, 2, clock.now())).toBe(0);
      const resumed = await claim();
      expect(resumed.map((c) => c.id).sort()).toEqual(claimed.map((c) => c.id).sort());
      expect(resumed.every((c) => c.attempt === 0 && !c.listener.held)).toBe(true);
    });

    test("a delivery held longer than the allowed wait is missed", async () => {
      const l = await listener("one");
      await markDown(l);
      const m = await publish();
      await store.deliveries.hold(await claim(), clock.now());
      clock.advance(999);
      expect(await store.deliveries.expireHeld(1000, clock.now())).toEqual([]);
      clock.advance(1);
      expect(await store.deliveries.expireHeld(1000, clock.now())).toEqual([{ orgId: org, listenerId: l.id, queueId: queue.id, messageId: m.id }]);
      expect(await stateOf(m.id)).toMatchObject({ state: "missed", attempts: 0, lastError: expect.stringContaining("down") });
      expect((await store.listeners.get(org, queue.id, l.id)).messages).toEqual({ acknowledgedCount: 0, missed: [m.id], missedCount: 1 });
    });

    test("hold of a listener that came back meanwhile leaves the delivery due", async () => {
      const l = await listener("one");
      const seq = await markDown(l);
      const m = await publish();
      const claimed = await claim();
      await store.deliveries.recordProbe({ seq, ok: true, state: "stable", failuresInRow: 0, nextProbeAt: clock.now() }, clock.now());
      expect(await store.deliveries.resume(seq, 100, clock.now())).toBe(0);
      await store.deliveries.hold(claimed, clock.now());
      expect(await stateOf(m.id)).toMatchObject({ state: "pending", nextAttemptAt: clock.now() });
    });

    test("release gives unsent deliveries back at once; releaseOwner frees a dead worker's leases", async () => {
      await listener("one");
      await publish();
      await publish();
      const mine = await claim({ owner: "w1", limit: 1 });
      const theirs = await claim({ owner: "w2", limit: 1 });
      expect(await store.deliveries.release(mine, clock.now())).toBe(1);
      expect(await store.deliveries.releaseOwner("w2", clock.now())).toBe(1);
      expect(await store.deliveries.releaseOwner("w", clock.now())).toBe(0);
      expect((await claim()).map((c) => c.id).sort()).toEqual([...mine, ...theirs].map((c) => c.id).sort());
    });

    test("probes are claimed when due, not twice while in flight, and counted", async () => {
      const l = await listener("one");
      const [p] = await store.deliveries.claimProbes(10, 5000, clock.now());
      expect(p).toMatchObject({ id: l.id, livenessUrl: "http://127.0.0.1/one/live", state: "pending", failuresInRow: 0 });
      expect(await store.deliveries.claimProbes(10, 5000, clock.now() + 4999)).toEqual([]);
      await store.deliveries.recordProbe({ seq: p!.seq, ok: false, state: "unstable", failuresInRow: 1, nextProbeAt: clock.now() + 100 }, clock.now());
      expect((await store.listeners.get(org, queue.id, l.id)).liveness).toEqual({ state: "unstable", successCount: 0, failureCount: 1 });
      expect(await store.deliveries.claimProbes(10, 5000, clock.now() + 99)).toEqual([]);
      const [again] = await store.deliveries.claimProbes(10, 5000, clock.now() + 100);
      expect(again).toMatchObject({ state: "unstable", failuresInRow: 1 });
      await store.deliveries.recordProbe({ seq: p!.seq, ok: true, state: "stable", failuresInRow: 0, nextProbeAt: clock.now() + 200 }, clock.now());
      expect((await store.listeners.get(org, queue.id, l.id)).liveness).toEqual({ state: "stable", successCount: 1, failureCount: 1 });
      await store.listeners.delete(org, queue.id, l.id, clock.now(), actor);
      expect(await store.deliveries.recordProbe({ seq: p!.seq, ok: true, state: "stable", failuresInRow: 0, nextProbeAt: 0 }, clock.now())).toBe(false);
    });

    test("during rotation the previous secret is handed out until its grace period ends", async () => {
      const l = await listener("one", "whsec_b2xk");
      await store.listeners.rotateSecret(org, queue.id, l.id, "whsec_bmV3", clock.now() + 1000, clock.now());
      await publish();
      expect((await claim())[0]!.listener.secrets).toEqual(["whsec_bmV3", "whsec_b2xk"]);
      await publish();
      clock.advance(1000);
      expect((await claim())[0]!.listener.secrets).toEqual(["whsec_bmV3"]);
    });
  });
}
