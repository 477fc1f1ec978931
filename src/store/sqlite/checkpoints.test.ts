import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import { openDatabase } from "./db.ts";
import { startCheckpoints, walBytes, walLog } from "./checkpoints.ts";
import { waitFor } from "../../../test/support/wait.ts";
import { mountTmpfs } from "../../../test/tmpfs.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-checkpoints-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the WAL's written and copied frames are read off the -shm file as SQLite counts them", () => {
  const path = join(dir, "count.db");
  const db = openDatabase(path, "normal");
  try {
    db.run("CREATE TABLE t (x TEXT)");
    for (let i = 0; i < 20; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(3000)]);
    const before = walLog(path)!;
    expect(before.pageSize).toBe((db.query("PRAGMA page_size").get() as { page_size: number }).page_size);
    expect(before.copied).toBe(0);
    const row = db.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
    expect(row.log).toBeGreaterThan(20);
    expect(before.frames).toBe(row.log);
    expect(walLog(path)).toEqual({ ...before, copied: row.checkpointed });
  } finally {
    db.close();
  }
  expect(walLog(join(dir, "none.db"))).toBeNull();
});

test("under steady writes the WAL is restarted and reused, not cut, and cut once the writes stop", async () => {
  const path = join(dir, "steady.db");
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  const stop = startCheckpoints(db, path, { failed: (_cause, e) => { throw e; }, recovered() {} });
  try {
    let cut = false;
    let restarts = 0;
    let most = 0;
    let rows = 0;
    // 1 MB at each look of waitFor, at most 20 ms apart: the 4 MiB threshold is crossed every few looks, and
    // no two of the timer's ticks (50 ms apart) pass without a write, so the WAL is never idle.
    await waitFor(() => {
      if (rows > 0 && walBytes(path) === 0) cut = true;
      db.transaction(() => {
        for (let i = 0; i < 250; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(4000)]);
      })();
      rows += 250;
      const frames = walLog(path)!.frames;
      if (frames < most) restarts++;
      most = Math.max(most, frames);
      return restarts >= 3;
    }, 10_000, () => `${restarts} restarts of the WAL in ${rows} rows`);
    expect(cut).toBe(false);
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
    expect((db.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(rows);
  } finally {
    stop();
    db.close();
  }
});

test("the timer folds the WAL back into the database and cuts it to nothing", async () => {
  const path = join(dir, "fold.db");
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  for (let i = 0; i < 50; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(4000)]);
  expect(walBytes(path)).toBeGreaterThan(100_000);
  const stop = startCheckpoints(db, path, { failed: (_cause, e) => { throw e; }, recovered() {} });
  try {
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
    expect((db.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(50);
  } finally {
    stop();
    db.close();
  }
});

/** Counts the checkpoints `db` starts: every round of the timer that is due begins with a PASSIVE one. */
function countCheckpoints(db: Database): () => number {
  let started = 0;
  const run = db.run.bind(db);
  db.run = ((sql: string, ...rest: never[]) => {
    if (sql.includes("wal_checkpoint(PASSIVE)")) started++;
    return run(sql, ...rest);
  }) as Database["run"];
  return () => started;
}

/** What a checkpoint timer reported, as lines. */
function recorder() {
  const lines: string[] = [];
  const errors: unknown[] = [];
  const report = {
    failed: (cause: string, error: unknown) => void (lines.push(`failed: ${cause}`), errors.push(error)),
    recovered: (cause: string) => void lines.push(`recovered: ${cause}`),
  };
  return { lines, errors, report };
}

test("a checkpoint that fails is reported once, and the timer goes on trying", async () => {
  const path = join(dir, "fail.db");
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  db.run("INSERT INTO t VALUES ('x')");
  // Another connection keeps the WAL file when this one closes; every statement on this one then throws.
  const keeper = openDatabase(path, "normal");
  db.close();
  expect(walBytes(path)).toBeGreaterThan(0);
  const { lines, errors, report } = recorder();
  const tries = countCheckpoints(db);
  const stop = startCheckpoints(db, path, report);
  try {
    await waitFor(() => lines.length >= 1, 5000, () => "no failure reported");
    expect(errors[0]).toBeInstanceOf(Error);
    // Tries go on twice a second; two of them later, the failure is still the one line.
    await waitFor(() => tries() >= 3, 5000, () => `${tries()} tries`);
    expect(lines).toEqual(["failed: checkpoint failed"]);
  } finally {
    stop();
    keeper.close();
  }
});

describe("on a full disk", () => {
  const disk = mountTmpfs(4 * 1024 * 1024, "the checkpoint test of a full disk");
  afterAll(() => disk?.unmount());

  test.skipIf(!disk)("a checkpoint that cannot grow the database is reported once as disk full, and once when it works again", async () => {
    const path = join(disk!.dir, "full.db");
    const db = openDatabase(path, "normal");
    const { lines, report } = recorder();
    let stop = () => {};
    try {
      // New pages in the WAL only: copying them grows the database file, which the full disk refuses.
      db.run("CREATE TABLE t (x TEXT)");
      for (let i = 0; i < 40; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(4000)]);
      disk!.fill();
      const tries = countCheckpoints(db);
      stop = startCheckpoints(db, path, report);
      await waitFor(() => lines.length >= 1, 5000, () => "no failure reported");
      await waitFor(() => tries() >= 3, 5000, () => `${tries()} tries`); // two more, reported by nothing
      expect(lines).toEqual(["failed: disk full"]);
      disk!.free();
      await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
      expect(lines).toEqual(["failed: disk full", "recovered: disk full"]);
      expect((db.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(40);
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    } finally {
      stop();
      db.close();
    }
  });
});

// POSIX drops all of a process's fcntl locks on a file when it closes any descriptor of it: reading the -shm must
// leave SQLite's own locks in place, or another process resets the wal-index under this one.
test.skipIf(!existsSync("/proc/locks"))("reading the -shm leaves this process's SQLite locks on it in place", () => {
  const path = join(dir, "locks.db");
  const db = openDatabase(path, "normal");
  try {
    db.run("CREATE TABLE t (x TEXT)");
    db.run("INSERT INTO t VALUES ('x')");
    const inode = statSync(`${path}-shm`).ino;
    const held = () => readFileSync("/proc/locks", "utf8").split("\n").filter((l) => l.includes(` ${process.pid} `) && l.includes(`:${inode} `));
    const before = held();
    expect(before.length).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) expect(walLog(path)?.frames).toBeGreaterThan(0);
    expect(held()).toEqual(before);
  } finally {
    db.close();
  }
});
