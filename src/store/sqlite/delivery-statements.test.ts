// The worker runs these statements many times a second against tables that grow with every message: each must
// reach its rows through an index or the rowid, never by scanning deliveries.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { SQL } from "./delivery-statements.ts";
import { planOnce } from "./plan-once.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-plan-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Full scans allowed on purpose. The fairness pass walks listeners (rare, under backpressure); giving back a
// dead worker's leases, or every lease at a server's start, walks the rows in flight, which the concurrency cap
// keeps few.
// The filtered listeners are read through their partial index, and listener_filters holds rows only while
// messages published under an earlier filter wait for their fan-out.
const ALLOWED_SCANS: Record<string, RegExp> = {
  filteredListeners: /^SCAN (listeners USING INDEX listeners_filtered|listener_filters USING COVERING INDEX listener_filters_listener)$/,
  filterHistory: /^SCAN listener_filters/,
  // The FIFO listeners, through their partial index (few of them).
  fifoDue: /^SCAN l USING INDEX listeners_fifo$/,
  // The head of a FIFO line: one row, found through deliveries_line.
  fifoHead: /^SCAN \(subquery-\d+\)$/,
  pruneFilters: /^SCAN listener_filters/,
  // The one-row CTE that bounds the slice to its chunk.
  fanoutUpTo: /^SCAN chunk$/,
  listenersWithDue: /^SCAN l$/,
  releaseOwner: /^SCAN deliveries USING INDEX deliveries_lease$/,
  releaseAll: /^SCAN deliveries USING INDEX deliveries_lease$/,
};
// Statements whose cost must not grow with the number of rows of the same state.
const MUST_USE: Record<string, string> = {
  dueWindow: "deliveries_due",
  nextDue: "deliveries_due",
  dueOfListener: "deliveries_listener_due",
  resume: "deliveries_listener_due",
  rescue: "deliveries_lease",
  heldTooLong: "deliveries_held",
  fanOut: "listeners_unfiltered",
  fanoutUpTo: "listeners_unfiltered",
  fifoHead: "deliveries_line",
};

test("hot delivery statements use indexes, not scans of deliveries", () => {
  const db = openDatabase(join(dir, "plan.db"), "normal");
  applyMigrations(db);
  for (const [name, sql] of Object.entries(SQL)) {
    const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${planOnce(sql)}`).all().map((r) => r.detail);
    const scans = plan.filter((d) => d.startsWith("SCAN") && !d.includes("json_each") && d !== "SCAN CONSTANT ROW" && !ALLOWED_SCANS[name]?.test(d));
    expect({ name, scans }).toEqual({ name, scans: [] });
    if (MUST_USE[name]) expect({ name, uses: plan.some((d) => d.includes(`INDEX ${MUST_USE[name]} `)) }).toEqual({ name, uses: true });
  }
  db.close();
});
