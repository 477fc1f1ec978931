/** Conformance: the figures /metrics reads (Store.gauges): pending and held deliveries, listeners by state, the oldest due. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./backends.ts";
import { manualClock } from "../../src/lib/clock.ts";
import type { Actor, Queue, Store } from "../../src/store/index.ts";
import type { ClaimRequest } from "../../src/store/deliveries.ts";

const actor: Actor = { keyId: "key_test", keyName: "test" };
const request: ClaimRequest = { owner: "w1", leaseMs: 10_000, limit: 100, perListener: 100, busy: new Map() };

for (const backend of BACKENDS) {
  describe(`${backend.name} store gauges`, () => {
    let store: Store;
    let orgs: string[];
    let queues: Queue[];
    const clock = manualClock();
    const listener = (i: number, name: string) =>
      store.listeners.create(orgs[i]!, queues[i]!.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/live`, secret: "whsec_x" }, clock.now(), actor);
    const publish = (i: number) => store.messages.publish(orgs[i]!, queues[i]!.id, { name: null, data: "1" }, clock.now(), actor);

    beforeEach(async () => {
      clock.set(1_700_000_000_000);
      store = await backend.open();
      orgs = [(await store.orgs.create("com.example.a", clock.now())).id, (await store.orgs.create("com.example.b", clock.now())).id];
      queues = await Promise.all(orgs.map((org) => store.queues.create(org, { name: "q", schema: null, schemaId: null }, clock.now(), actor)));
    });
    afterEach(async () => store.close());

    test("an empty database: nothing pending, nothing due, its size on disk", async () => {
      const g = await store.gauges(clock.now());
      expect(g).toMatchObject({ deliveries: [], listeners: [], oldestDueAt: null });
      expect(g.databaseBytes).toBeGreaterThan(0);
    });

    test("deliveries pending and held, per organization; listeners by state", async () => {
      const up = await listener(0, "up");
      const down = await listener(0, "down");
      await listener(1, "other");
      const probes = await store.deliveries.claimProbes(10, 1000, clock.now());
      const downSeq = probes.find((p) => p.id === down.id)!.seq;
      await store.deliveries.recordProbe({ seq: downSeq, ok: false, state: "down", failuresInRow: 3, nextProbeAt: clock.now() + 1000 }, clock.now());
      const upSeq = probes.find((p) => p.id === up.id)!.seq;
      await store.deliveries.recordProbe({ seq: upSeq, ok: true, state: "stable", failuresInRow: 0, nextProbeAt: clock.now() + 1000 }, clock.now());
      const publishedAt = clock.now();
      for (let i = 0; i < 3; i++) await publish(0);
      await publish(1);
      // Not fanned out yet: the oldest message counts as due since its publish.
      clock.advance(50);
      expect((await store.gauges(clock.now())).oldestDueAt).toBe(publishedAt);
      // The claim writes 3 × 2 + 1 deliveries and leases them; the down listener's are held.
      const { claimed } = await store.deliveries.claimDue(request, clock.now());
      await store.deliveries.hold(claimed.filter((c) => c.listener.held), clock.now());
      await store.deliveries.release(claimed.filter((c) => !c.listener.held && c.listener.id !== up.id), clock.now());
      const g = await store.gauges(clock.now());
      const byOrg = Object.fromEntries(g.deliveries.map((d) => [d.orgId, { pending: d.pending, held: d.held }]));
      // org 0: three held (down), three in flight to `up` (neither pending nor held); org 1: one given back, pending.
      expect(byOrg).toEqual({ [orgs[0]!]: { pending: 0, held: 3 }, [orgs[1]!]: { pending: 1, held: 0 } });
      expect(g.oldestDueAt).toBe(clock.now());
      const states = g.listeners.map((l) => [l.orgId === orgs[0] ? "a" : "b", l.state, l.count]).sort();
      expect(states).toEqual([["a", "down", 1], ["a", "stable", 1], ["b", "pending", 1]]);
    });
  });
}
