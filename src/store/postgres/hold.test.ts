// The claim's hold of a listener, in SQL (delivery-sql.ts HOLD_SQL), gives what store/deliveries.ts holdOf gives.
import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { HOLD_SQL, positional } from "./delivery-sql.ts";
import { holdOf } from "../deliveries.ts";
import { postgresAvailable, TEST_PG_URL } from "../../../test/support/postgres.ts";

const settings = [
  { ordering: "unordered", concurrency: null, rate_limit: null },
  { ordering: "unordered", concurrency: 3, rate_limit: null },
  { ordering: "unordered", concurrency: null, rate_limit: 1 },
  { ordering: "unordered", concurrency: null, rate_limit: 7 },
  { ordering: "unordered", concurrency: 2, rate_limit: 100 },
  { ordering: "unordered", concurrency: 256, rate_limit: 10_000 },
  { ordering: "fifo", concurrency: null, rate_limit: 5 },
  { ordering: "fifo", concurrency: 1, rate_limit: null },
];

describe.if(await postgresAvailable())("HOLD_SQL", () => {
  test("agrees with holdOf for every kind of listener", async () => {
    const sql = new SQL(TEST_PG_URL);
    try {
      const text = positional(`SELECT ${HOLD_SQL} AS hold FROM json_to_recordset($settings::text::json) AS l(ordering text, concurrency int, rate_limit int)`,
        ["settings", "per_listener", "hold_per_request"]);
      const rows: { hold: number }[] = await sql.unsafe(text, [JSON.stringify(settings), 64, 4]);
      const expected = settings.map((s) => holdOf({ concurrency: s.concurrency, rateLimit: s.rate_limit, fifo: s.ordering === "fifo" }, { perListener: 64, holdPerRequest: 4 }));
      expect(rows.map((r) => Number(r.hold))).toEqual(expected);
    } finally {
      await sql.close();
    }
  });
});
