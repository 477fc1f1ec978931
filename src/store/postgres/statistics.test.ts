/** The housekeeping leader keeps the planner's statistics of the hot tables fresh where autovacuum does not. */
import { afterAll, describe, expect, test } from "bun:test";
import { openPostgresStore, type PostgresStore } from "./index.ts";
import { refreshStatistics } from "./statistics.ts";
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../../test/support/postgres.ts";

describe.if(await postgresAvailable())("planner statistics", () => {
  let database: TestDatabase | undefined;
  let store: PostgresStore | undefined;
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  test("tables changed beyond autovacuum's threshold since their last analysis are analyzed, and only those", async () => {
    database = await createTestDatabase();
    store = await openPostgresStore(database.url, { pool: 2, role: "test" });
    const actor = { keyId: "k", keyName: "k" };
    const org = (await store.orgs.create("com.example.stats", 1)).id;
    const queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
    await store.listeners.create(org, queue.id, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "s" }, 1, actor);
    await Promise.all(Array.from({ length: 300 }, (_, i) => store!.messages.publish(org, queue.id, { name: null, data: "1" }, 2 + i, actor)));
    // The statistics collector reports changes with a short delay: wait until it knows of them.
    const changed = async () => (await store!.client`SELECT n_mod_since_analyze AS n FROM pg_stat_user_tables WHERE relname = 'deliveries'`)[0]?.n;
    const deadline = Date.now() + 5_000;
    while (Number(await changed()) < 300 && Date.now() < deadline) await Bun.sleep(50);
    expect((await refreshStatistics(store.client)).sort()).toEqual(["deliveries", "events", "messages"]);
    expect(await refreshStatistics(store.client)).toEqual([]);
  });
});
