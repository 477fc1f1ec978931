/** What leaves the PostgreSQL store when a query fails: never the query's parameters; 503 when the server is gone. */
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drizzleOf, openClient } from "./client.ts";
import { guarded } from "./errors.ts";
import { parsePostgresUrl } from "./url.ts";
import { StorageUnavailable } from "../../lib/errors.ts";
import { postgresAvailable, TEST_PG_URL } from "../../../test/support/postgres.ts";

describe.if(await postgresAvailable())("postgres store errors", () => {
  test("a failed query becomes a DatabaseError with the SQLSTATE, without the parameters Drizzle puts in its message", async () => {
    const client = openClient(parsePostgresUrl(TEST_PG_URL), 1, "test");
    const db = drizzleOf(client);
    const secret = "payload-that-must-not-be-logged";
    try {
      const raw = await db.execute(sql`SELECT 1 / 0 WHERE ${secret} <> ''`).catch((e) => e);
      expect(String(raw.message)).toContain(secret); // what would reach a log unmapped
      const mapped = await guarded(() => db.execute(sql`SELECT 1 / 0 WHERE ${secret} <> ''`)).catch((e) => e);
      expect(mapped.name).toBe("DatabaseError");
      expect(mapped.message).toBe("PostgreSQL 22012: division by zero");
      expect(`${mapped.message} ${mapped.stack} ${JSON.stringify(mapped)}`).not.toContain(secret);
    } finally {
      await client.close();
    }
  });

  test("a server that cannot be reached is StorageUnavailable: a 503 with Retry-After, without the password", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    const client = openClient(parsePostgresUrl(`postgres://fanout:pw@127.0.0.1:${port}/fanout`), 1, "test");
    try {
      const mapped = await guarded(() => drizzleOf(client).execute(sql`SELECT 1`)).catch((e) => e);
      expect(mapped).toBeInstanceOf(StorageUnavailable);
      expect(mapped.reason).toBe("database unreachable");
      expect(mapped.status).toBe(503);
      expect(mapped.headers).toEqual({ "retry-after": "5" });
      expect(`${mapped.message} ${mapped.underlying}`).not.toContain("pw");
    } finally {
      await client.close();
    }
  });
});
