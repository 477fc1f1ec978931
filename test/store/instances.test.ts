/**
 * Conformance for backends whose instances share one database (PostgreSQL): lockouts counted across instances
 * (the rule of http/lockout.ts), each instance told of the others' locks, and what instances remember (found API
 * keys) forgotten when another changes it.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { storeBackends } from "./backends.ts";
import type { LockoutRule, Store } from "../../src/store/index.ts";
import { waitFor } from "../support/wait.ts";
import { manualClock } from "../../src/lib/clock.ts";

const T0 = 1_700_000_000_000;
const actor = { keyId: "key_test", keyName: "test" };
const rule: LockoutRule = { attempts: 3, windowMs: 60_000, lockMs: 300_000 };
/** b's clock: it stands still, so a key b found stays in its cache for the whole test. */
const clock = manualClock();

for (const backend of storeBackends().filter((b) => b.openAnother)) {
  describe(`${backend.name} store: several instances`, () => {
    let a: Store;
    let b: Store;
    beforeEach(async () => {
      a = await backend.open();
      clock.set(T0);
      b = await backend.openAnother!(clock);
    });
    afterEach(async () => {
      await a.close();
      await b.close();
    });

    test("failures from one address count toward one lock, whichever instance saw them", async () => {
      expect(await a.lockouts!.fail("1.2.3.4", rule, T0)).toBe(0);
      expect(await b.lockouts!.fail("1.2.3.4", rule, T0 + 1_000)).toBe(0);
      expect(await b.lockouts!.fail("5.6.7.8", rule, T0 + 1_000)).toBe(0);
      expect(await a.lockouts!.locked(T0 + 1_000)).toEqual([]);
      expect(await a.lockouts!.fail("1.2.3.4", rule, T0 + 2_000)).toBe(T0 + 302_000);
      expect(await b.lockouts!.locked(T0 + 301_999)).toEqual([{ address: "1.2.3.4", until: T0 + 302_000 }]);
      expect(await b.lockouts!.locked(T0 + 302_000)).toEqual([]);
    });

    test("failures older than the window are forgotten, and a lock starts the count afresh", async () => {
      await a.lockouts!.fail("a", rule, T0);
      await a.lockouts!.fail("a", rule, T0 + 1);
      expect(await b.lockouts!.fail("a", rule, T0 + 60_000)).toBe(0); // a new window: 1 of 3
      expect(await b.lockouts!.fail("a", rule, T0 + 60_001)).toBe(0);
      const until = await a.lockouts!.fail("a", rule, T0 + 60_002);
      expect(until).toBe(T0 + 360_002);
      expect(await a.lockouts!.fail("a", rule, until)).toBe(0);
      expect(await a.lockouts!.fail("a", rule, until)).toBe(0);
      expect(await a.lockouts!.fail("a", rule, until)).toBe(until + rule.lockMs);
    });

    test("an instance hears of the locks another takes, and reads them all again when it (re)subscribes", async () => {
      await a.lockouts!.fail("early", rule, Date.now());
      await a.lockouts!.fail("early", rule, Date.now());
      const early = await a.lockouts!.fail("early", rule, Date.now());
      const heard: [string, number][] = [];
      let resyncs = 0;
      await b.lockouts!.watch({ locked: (address, until) => heard.push([address, until]), resync: () => resyncs++ });
      expect(resyncs).toBe(1);
      expect(await b.lockouts!.locked(Date.now())).toEqual([{ address: "early", until: early }]);
      const now = Date.now();
      await a.lockouts!.fail("late", { ...rule, attempts: 1 }, now);
      await waitFor(() => heard.length > 0, 5_000, () => "b never heard of the lock");
      expect(heard).toEqual([["late", now + rule.lockMs]]);
    });

    test("an API key disabled on one instance is refused by another at once, not when its cache ages out", async () => {
      const org = await a.orgs.create("com.example.keys", T0);
      const key = await a.apiKeys.create(org.id, { name: "k", status: "enabled", scopes: [], hash: "h1", owner: false }, T0, actor);
      await b.lockouts!.watch({ locked: () => {}, resync: () => {} }); // resolves once b's subscription is up
      expect((await b.apiKeys.authenticate("h1"))?.status).toBe("enabled"); // now remembered by b
      await a.apiKeys.update(org.id, key.id, { status: "disabled" }, T0 + 1, actor);
      // b's clock stands still, so its cache never ages out here: only the notification can make b see it.
      await waitFor(async () => (await b.apiKeys.authenticate("h1"))?.status === "disabled", 10_000,
        () => "b still takes the key: it waits for its cache to age out");
    });
  });
}
