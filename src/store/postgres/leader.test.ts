/** Periodic work on one instance at a time: the advisory lock on a reserved session, taken over when its holder goes. */
import { afterAll, describe, expect, test } from "bun:test";
import { Leadership } from "./leader.ts";
import { parsePostgresUrl } from "./url.ts";
import { createTestDatabase, postgresAvailable, withTestDatabase, type TestDatabase } from "../../../test/support/postgres.ts";
import { waitFor } from "../../../test/support/wait.ts";


describe.if(await postgresAvailable())("leadership", () => {
  let database: TestDatabase | undefined;
  const open = async (lock = 7) => {
    database ??= await createTestDatabase();
    return new Leadership(parsePostgresUrl(database.url), lock, "test");
  };
  afterAll(async () => database?.drop());

  test("one of several leads; when it closes, the next to ask takes over", async () => {
    const [a, b, other] = [await open(), await open(), await open(8)];
    try {
      expect(await a.lead()).toBe(true);
      expect(await b.lead()).toBe(false);
      expect(await a.lead()).toBe(true); // the holder keeps it
      expect(await other.lead()).toBe(true); // another task's lock is its own
      await a.close();
      expect(await b.lead()).toBe(true);
    } finally {
      await Promise.all([a, b, other].map((l) => l.close()));
    }
  });

  test("a holder whose session broke (a server restart ends it) stops leading, and takes the lock again once it is free", async () => {
    const a = await open(9);
    const b = await open(9);
    try {
      expect(await a.lead()).toBe(true);
      await withTestDatabase(database!.url, (sql) =>
        sql`SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'fanout test leader%' AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 9)`);
      expect(await a.lead()).toBe(false); // its session is gone, and the lock with it
      // Another instance takes over once the server let the session go.
      await waitFor(() => b.lead(), 5_000, () => "the other instance never took the lock");
      expect(await a.lead()).toBe(false);
      await b.close();
      expect(await a.lead()).toBe(true); // a new session of its own
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
