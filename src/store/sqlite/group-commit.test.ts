import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { GroupCommit } from "./group-commit.ts";
import { LockSignal } from "./lock-signal.ts";
import { AppError, notFound } from "../../lib/errors.ts";

function open(path: string) {
  const db = new Database(path, { create: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA busy_timeout = 5000");
  return db;
}
const fresh = () => {
  const path = join(mkdtempSync(join(tmpdir(), "fanout-gc-")), "t.db");
  const db = open(path);
  db.run("CREATE TABLE t (v INTEGER UNIQUE)");
  return { db, path };
};
/** Whether the running unit has a savepoint of its own: only inside a guarded unit can `unit` be released. */
function inUnitSavepoint(db: Database): boolean {
  try {
    db.run("SAVEPOINT probe");
    db.run("RELEASE unit");
    return true;
  } catch {
    db.run("RELEASE probe");
    return false;
  }
}

const count = (db: Database) => db.query<{ n: number }, []>("SELECT count(*) AS n FROM t").get()!.n;

test("writes that arrive together share one transaction; a failing unit is rolled back alone", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  const results = await Promise.allSettled([1, 2, 2, 3].map((v) => commits.run(() => db.run("INSERT INTO t (v) VALUES (?)", [v]))));
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect(count(db)).toBe(3);
});

test("a unit's value is returned after commit, visible to another connection", async () => {
  const { db, path } = fresh();
  const commits = new GroupCommit(db, 1000);
  const value = await commits.run(() => (db.run("INSERT INTO t (v) VALUES (7)"), "done"));
  expect(value).toBe("done");
  expect(count(open(path))).toBe(1);
});

test("a checked unit runs without a savepoint; its AppError, thrown before any write, fails it alone", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  let savepointInside: boolean | undefined;
  const checked = () => {
    savepointInside = inUnitSavepoint(db);
    db.run("INSERT INTO t (v) VALUES (2)");
  };
  const refused = () => {
    throw notFound("The queue");
  };
  const results = await Promise.allSettled([
    commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")),
    commits.run(checked, "checked"),
    commits.run(refused, "checked"),
    commits.run(() => db.run("INSERT INTO t (v) VALUES (3)"), "checked"),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(AppError);
  expect(savepointInside).toBe(false);
  expect(count(db)).toBe(3);
});

test("any other error from a checked unit may follow a write of it: the whole batch is rolled back and fails", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  const halfDone = () => {
    db.run("INSERT INTO t (v) VALUES (20)");
    db.run("INSERT INTO t (v) VALUES (10)"); // UNIQUE: SQLite's own error, after the unit's first write
  };
  const results = await Promise.allSettled([
    commits.run(() => db.run("INSERT INTO t (v) VALUES (10)")),
    commits.run(halfDone, "checked"),
    commits.run(() => db.run("INSERT INTO t (v) VALUES (30)")),
  ]);
  expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
  expect(results.map((r) => String((r as PromiseRejectedResult).reason))).toEqual(Array(3).fill(expect.stringContaining("UNIQUE")));
  expect(count(db)).toBe(0);
  expect(db.inTransaction).toBe(false);
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (10)"), "checked");
  expect(count(db)).toBe(1);
});

test("a unit alone commits in a transaction of its own, without a savepoint, between the units around it", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  const insert = (v: number) => () => db.run("INSERT INTO t (v) VALUES (?)", [v]);
  let savepointInside: boolean | undefined;
  const alone = () => {
    savepointInside = inUnitSavepoint(db);
    db.run("INSERT INTO t (v) VALUES (2)");
  };
  const results = await Promise.allSettled([commits.run(insert(1)), commits.run(alone, "alone"), commits.run(insert(3))]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
  expect(savepointInside).toBe(false);
  expect(count(db)).toBe(3);
});

test("a unit alone that throws rolls back its own transaction only", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  const failing = () => {
    db.run("INSERT INTO t (v) VALUES (5)");
    throw new Error("no");
  };
  const results = await Promise.allSettled([commits.run(() => db.run("INSERT INTO t (v) VALUES (4)")), commits.run(failing, "alone"), commits.run(() => db.run("INSERT INTO t (v) VALUES (6)"))]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(db.query<{ v: number }, []>("SELECT v FROM t ORDER BY v").all().map((r) => r.v)).toEqual([4, 6]);
  expect(db.inTransaction).toBe(false);
});

test("a database locked by another connection is waited for without blocking the event loop", async () => {
  const { db, path } = fresh();
  const other = open(path);
  other.run("BEGIN IMMEDIATE");
  const commits = new GroupCommit(db, 2000);
  const write = commits.run(() => db.run("INSERT INTO t (v) VALUES (1)"));
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  await Bun.sleep(100);
  expect(ticks).toBeGreaterThan(5); // the loop kept running while the write waited
  other.run("COMMIT");
  await write;
  clearInterval(timer);
  expect(count(db)).toBe(1);
});

test("with a lock signal, a busy batch waits for the other writer's release and then commits", async () => {
  const { db, path } = fresh();
  const other = open(path);
  const signal = new LockSignal();
  other.run("BEGIN IMMEDIATE");
  const commits = new GroupCommit(db, 2000, undefined, signal);
  let done = false;
  const write = commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).then(() => (done = true));
  await Bun.sleep(50);
  expect(done).toBe(false);
  other.run("COMMIT");
  signal.released();
  await write;
  expect(count(db)).toBe(1);
});

test("a lock held past the timeout fails the waiting writes with 503, and later writes succeed", async () => {
  const { db, path } = fresh();
  const other = open(path);
  other.run("BEGIN IMMEDIATE");
  const commits = new GroupCommit(db, 50);
  const failed = await commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).catch((e) => e);
  expect(failed.status).toBe(503);
  other.run("COMMIT");
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (2)"));
  expect(count(db)).toBe(1);
});

test("a BEGIN that fails for another reason than a lock settles the waiting writes instead of crashing", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  db.run("BEGIN"); // the connection is already in a transaction: BEGIN IMMEDIATE fails, and not as "busy"
  const failed = await commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).catch((e) => e);
  expect(failed).toBeInstanceOf(Error);
  expect(String(failed.message)).toContain("transaction");
  db.run("ROLLBACK");
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (2)"));
  expect(count(db)).toBe(1);
});
