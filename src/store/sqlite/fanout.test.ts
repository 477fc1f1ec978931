// Read on every publish batch and listener creation: the last seq given out must not cost a scan of any table.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { LAST_SEQ_SQL } from "./fanout.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-seq-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the last seq given out is read off the rowid and the indexes, not by scanning", () => {
  const db = openDatabase(join(dir, "plan.db"), "normal");
  applyMigrations(db);
  const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${LAST_SEQ_SQL}`).all().map((r) => r.detail);
  expect(plan.filter((d) => d.startsWith("SCAN") && d !== "SCAN CONSTANT ROW")).toEqual([]);
  expect(plan).toContain("SEARCH listeners USING COVERING INDEX listeners_from_seq");
  db.close();
});
