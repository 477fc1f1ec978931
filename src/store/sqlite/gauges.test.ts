// /metrics reads these at every scrape, and the deliveries table can hold millions of rows: each statement must
// reach deliveries through an index (the pending rows' own), never by scanning the table.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { GAUGES_SQL } from "./gauges.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-gauges-plan-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The listeners table is small (one row per listener) and is read whole on purpose.
const ALLOWED_SCANS: Record<string, RegExp> = { listeners: /^SCAN listeners/, deliveries: /^SCAN c$/ };
const MUST_USE: Record<string, RegExp> = {
  deliveries: /^SCAN deliveries USING COVERING INDEX deliveries_listener_due$/,
  oldestDue: /^SEARCH deliveries USING COVERING INDEX deliveries_due /,
  oldestUnfanned: /^SEARCH messages USING INTEGER PRIMARY KEY/,
};

test("the gauges read deliveries through their indexes", () => {
  const db = openDatabase(join(dir, "plan.db"), "normal");
  applyMigrations(db);
  for (const [name, sql] of Object.entries(GAUGES_SQL)) {
    const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => r.detail);
    const scans = plan.filter((d) => d.startsWith("SCAN") && !ALLOWED_SCANS[name]?.test(d) && !MUST_USE[name]?.test(d));
    expect({ name, scans }).toEqual({ name, scans: [] });
    if (MUST_USE[name]) expect({ name, uses: plan.some((d) => MUST_USE[name]!.test(d)) }).toEqual({ name, uses: true });
  }
  db.close();
});
