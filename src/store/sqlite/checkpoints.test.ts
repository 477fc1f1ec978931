import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { startCheckpoints, walBytes } from "./checkpoints.ts";
import { waitFor } from "../../../test/e2e/harness.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-checkpoints-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


test("the timer folds the WAL back into the database and cuts it to nothing", async () => {
  const path = join(dir, "fold.db");
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  for (let i = 0; i < 50; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(4000)]);
  expect(walBytes(path)).toBeGreaterThan(100_000);
  const stop = startCheckpoints(db, path, (e) => {
    throw e;
  });
  try {
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
    expect((db.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(50);
  } finally {
    stop();
    db.close();
  }
});

test("a checkpoint that fails is reported, and the timer goes on trying", async () => {
  const path = join(dir, "fail.db");
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  db.run("INSERT INTO t VALUES ('x')");
  // Another connection keeps the WAL file when this one closes; every statement on this one then throws.
  const keeper = openDatabase(path, "normal");
  db.close();
  expect(walBytes(path)).toBeGreaterThan(0);
  const reported: unknown[] = [];
  const stop = startCheckpoints(db, path, (e) => reported.push(e));
  try {
    await waitFor(() => reported.length >= 2, 5000, () => `${reported.length} failure(s) reported`);
    expect(reported[0]).toBeInstanceOf(Error);
  } finally {
    stop();
    keeper.close();
  }
});
