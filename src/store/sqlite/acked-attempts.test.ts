// A message's attempts log and the move of an acknowledging attempt at a new cycle read through indexes: the
// deliveries and attempts tables grow with every message.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { MESSAGE_ATTEMPTS_SQL, newCycle } from "./acked-attempts.ts";
import { REPLAY_CHUNK } from "./replays.ts";
import { STARTED_AGAIN } from "./messages.ts";
import { planOnce } from "./plan-once.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-acked-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the attempts log and the move at a replay use the message's and the listener's indexes, never a scan", () => {
  const db = openDatabase(join(dir, "plan.db"), "normal");
  applyMigrations(db);
  const plan = (sql: string) => db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => r.detail);
  const log = plan(MESSAGE_ATTEMPTS_SQL);
  expect(log.filter((d) => d.startsWith("SCAN"))).toEqual([]);
  expect(log.filter((d) => d.includes("INDEX deliveries_message "))).toHaveLength(2);
  expect(log).toContainEqual(expect.stringContaining("INDEX attempts_delivery "));
  const replay = plan(planOnce(newCycle(REPLAY_CHUNK, "$now").keep));
  expect(replay.filter((d) => d.startsWith("SCAN"))).toEqual([]);
  expect(replay).toContainEqual(expect.stringContaining("INDEX deliveries_listener "));
  const redeliver = plan(newCycle(STARTED_AGAIN, "?2").keep);
  expect(redeliver.filter((d) => d.startsWith("SCAN") && !d.includes("json_each"))).toEqual([]);
  db.close();
});
