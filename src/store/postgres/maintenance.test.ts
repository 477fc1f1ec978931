/** The housekeeping leader keeps the planner's statistics of the hot tables fresh where autovacuum does not. */
import { afterAll, describe, expect, test } from "bun:test";
import { openPostgresStore, type PostgresStore } from "./index.ts";
import { refreshStatistics, removeDeadRows } from "./maintenance.ts";
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../../test/support/postgres.ts";
import { waitFor } from "../../../test/support/wait.ts";

describe.if(await postgresAvailable())("maintenance", () => {
  let database: TestDatabase | undefined;
  let store: PostgresStore | undefined;
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test("tables changed beyond autovacuum's threshold since their last analysis are analyzed, and only those, at most every 30 s", async () => {
    database = await createTestDatabase();
    store = await openPostgresStore(database.url, { pool: 2, role: "test" });
    const actor = { keyId: "k", keyName: "k" };
    const org = (await store.orgs.create("com.example.stats", 1)).id;
    const queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
    await store.listeners.create(org, queue.id, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "s" }, 1, actor);
    await Promise.all(Array.from({ length: 300 }, (_, i) => store!.messages.publish(org, queue.id, { name: null, data: "1" }, 2 + i, actor)));
    // The statistics collector reports changes with a delay (an idle connection flushes its counts within 10 s):
    // wait until it knows of them.
    const changed = async () => (await store!.client`SELECT n_mod_since_analyze AS n FROM pg_stat_user_tables WHERE relname = 'deliveries'`)[0]?.n;
    const known = async () => Number(await changed()) >= 300;
    await waitFor(known, 15_000, () => "the statistics never counted the changes");
    const analyzedAt = Date.now();
    expect((await refreshStatistics(store.client, analyzedAt)).sort()).toEqual(["deliveries", "events", "messages"]);
    expect(await refreshStatistics(store.client, analyzedAt)).toEqual([]);
    // Changed beyond the threshold again: analyzed once 30 s have passed, not before.
    await Promise.all(Array.from({ length: 300 }, (_, i) => store!.messages.publish(org, queue.id, { name: null, data: "1" }, 400 + i, actor)));
    await waitFor(known, 15_000, () => "the statistics never counted the changes");
    expect(await refreshStatistics(store.client, analyzedAt + 20_000)).toEqual([]);
    expect((await refreshStatistics(store.client, analyzedAt + 31_000)).sort()).toEqual(["deliveries", "events", "messages"]);
  });

  test("a table with many dead rows is vacuumed, and not again at once", async () => {
    // Claiming and settling 6,000 deliveries leaves two dead versions of each behind.
    const actor = { keyId: "k", keyName: "k" };
    const [org] = await store!.orgs.list();
    const [queue] = (await store!.queues.list(org!.id, "all", { offset: 0, limit: 1 })).items;
    await Promise.all(Array.from({ length: 6_000 }, (_, i) => store!.messages.publish(org!.id, queue!.id, { name: null, data: "1" }, 10_000 + i, actor)));
    const request = { owner: "w", leaseMs: 10_000, limit: 256, perListener: 10_000, busy: new Map<number, number>() };
    for (;;) {
      const { claimed } = await store!.deliveries.claimDue(request, 20_000);
      if (claimed.length === 0) break;
      await store!.deliveries.complete(claimed.map((c) => ({ id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id,
        messageId: c.message.id, attempt: 1, next: { state: "acknowledged" as const }, record: { attemptedAt: 20_000, statusCode: 200, durationMs: 1, error: null, response: null } })), 20_000);
    }
    const dead = async () => Number((await store!.client`SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relname = 'deliveries'`)[0]?.n);
    await waitFor(async () => (await dead()) >= 12_000, 15_000, () => "the statistics never counted the dead rows");
    expect(await removeDeadRows(store!.client, Date.now())).toContain("deliveries");
    expect(await removeDeadRows(store!.client, Date.now())).not.toContain("deliveries");
  });
});
