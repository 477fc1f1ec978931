import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-db-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pragma = (db: ReturnType<typeof openDatabase>, name: string) => Object.values(db.query(`PRAGMA ${name}`).get() as object)[0];

test("a connection is opened with the settings the store relies on", () => {
  const normal = openDatabase(join(dir, "n.db"), "normal");
  expect(pragma(normal, "journal_mode")).toBe("wal");
  expect(pragma(normal, "synchronous")).toBe(1); // NORMAL
  expect(pragma(normal, "foreign_keys")).toBe(1);
  // Savepoint sub-journals in memory: on disk they cost a temporary file per commit (db.ts).
  expect(pragma(normal, "temp_store")).toBe(2); // MEMORY
  // Only the store's timer checkpoints (checkpoints.ts), never a commit.
  expect(pragma(normal, "wal_autocheckpoint")).toBe(0);
  const full = openDatabase(join(dir, "f.db"), "full");
  expect(pragma(full, "synchronous")).toBe(2); // FULL
  normal.close();
  full.close();
});
