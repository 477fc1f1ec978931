import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { GroupCommit } from "./group-commit.ts";
import { LockSignal } from "./lock-signal.ts";
import { AppError, notFound, StorageUnavailable } from "../../lib/errors.ts";
import { asStorageError } from "./writability.ts";
import { mountTmpfs } from "../../../test/tmpfs.ts";
import { tempFolder } from "../../../test/support/temp.ts";
import { waitFor } from "../../../test/support/wait.ts";

function open(path: string) {
  const db = new Database(path, { create: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA busy_timeout = 5000");
  return db;
}
const fresh = () => {
  const path = join(tempFolder("fanout-gc-"), "t.db");
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

/** Counts the BEGINs tried on `db`: each is one look at the write lock. */
function countBegins(db: Database): () => number {
  let begins = 0;
  const run = db.run.bind(db);
  db.run = ((sql: string, ...rest: never[]) => {
    if (sql.startsWith("BEGIN")) begins++;
    return run(sql, ...rest);
  }) as Database["run"];
  return () => begins;
}

test("a database locked by another connection is waited for without blocking the event loop", async () => {
  const { db, path } = fresh();
  const other = open(path);
  other.run("BEGIN IMMEDIATE");
  const begins = countBegins(db);
  const commits = new GroupCommit(db, 2000);
  let settled = false;
  const write = commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).finally(() => (settled = true));
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  // A BEGIN that slept in SQLite's busy handler would hold this thread, and these timers, for the whole 2 s
  // busy timeout each time, and the batch would fail with 503 before ten of them had fired.
  await waitFor(() => ticks >= 10 && begins() >= 3, 10_000, () => `${ticks} ticks and ${begins()} BEGINs`);
  expect(settled).toBe(false);
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
  const begins = countBegins(db);
  const commits = new GroupCommit(db, 2000, undefined, signal);
  let done = false;
  const write = commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).then(() => (done = true));
  // Three BEGINs found the lock taken: the write has been refused, and waits.
  await waitFor(() => begins() >= 3, 10_000, () => `only ${begins()} BEGINs`);
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
  const commits = new GroupCommit(db, 1000, undefined, undefined, asStorageError);
  db.run("PRAGMA query_only = 1"); // BEGIN IMMEDIATE fails with SQLITE_READONLY, not as "busy"
  const failed = await commits.run(() => db.run("INSERT INTO t (v) VALUES (1)")).catch((e) => e);
  expect(failed).toBeInstanceOf(StorageUnavailable);
  expect(failed).toMatchObject({ status: 503, reason: "read-only", headers: { "retry-after": "5" } });
  db.run("PRAGMA query_only = 0");
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (2)"));
  expect(count(db)).toBe(1);
});

test("a transaction a failure left open on the connection is rolled back before the next batch", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000);
  db.run("BEGIN");
  db.run("INSERT INTO t (v) VALUES (1)"); // what an I/O error can leave behind: never committed
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (2)"));
  expect(db.query("SELECT v FROM t").all()).toEqual([{ v: 2 }]);
});

test("a unit that hits a full database fails alone or with its batch, as its mode says; every write settles", async () => {
  const { db } = fresh();
  const commits = new GroupCommit(db, 1000, undefined, undefined, asStorageError);
  await commits.run(() => db.run("INSERT INTO t (v) VALUES (0)"));
  // No page may be added: a statement that needs one fails with SQLITE_FULL inside the transaction.
  db.run(`PRAGMA max_page_count = ${(db.query("PRAGMA page_count").get() as { page_count: number }).page_count}`);
  const grow = (name: string) => () => db.run(`CREATE TABLE ${name} (x)`); // a new table needs a page
  const set = (v: number) => () => db.run("UPDATE t SET v = ?", [v]);
  const guarded = await Promise.allSettled([commits.run(set(1)), commits.run(grow("a"))]);
  expect(guarded[0]).toMatchObject({ status: "fulfilled" });
  expect(guarded[1]).toMatchObject({ status: "rejected", reason: { status: 503, reason: "disk full" } });
  expect(db.query("SELECT v FROM t").all()).toEqual([{ v: 1 }]);
  // A checked unit's failure may come after its first write: the whole batch is rolled back.
  const checked = await Promise.allSettled([commits.run(set(2)), commits.run(grow("b"), "checked")]);
  for (const o of checked) expect(o).toMatchObject({ status: "rejected", reason: { status: 503, reason: "disk full" } });
  expect(db.inTransaction).toBe(false);
  expect(db.query("SELECT v FROM t").all()).toEqual([{ v: 1 }]);
  db.run("PRAGMA max_page_count = 1073741823");
  await commits.run(grow("c"));
  await commits.run(set(3));
  expect(db.query("SELECT v FROM t").all()).toEqual([{ v: 3 }]);
});

describe("on a full disk", () => {
  const disk = mountTmpfs(2 * 1024 * 1024, "the group commit's test of a full disk");
  afterAll(() => disk?.unmount());

  test.skipIf(!disk)("a COMMIT the disk refuses fails every write of its batch with 503, and writes commit again once it has room", async () => {
    const db = open(join(disk!.dir, "t.db"));
    try {
      db.run("CREATE TABLE t (v INTEGER UNIQUE, pad TEXT)");
      const commits = new GroupCommit(db, 1000, undefined, undefined, asStorageError);
      disk!.fill();
      const write = (v: number) => commits.run(() => db.run("INSERT INTO t VALUES (?, ?)", [v, "x".repeat(3000)]));
      const outcomes = await Promise.allSettled([write(1), write(2), write(3)]);
      for (const o of outcomes) expect(o).toMatchObject({ status: "rejected", reason: { status: 503, reason: "disk full" } });
      expect(db.inTransaction).toBe(false);
      expect(count(db)).toBe(0);
      disk!.free();
      await Promise.all([write(4), write(5)]);
      expect(count(db)).toBe(2);
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    } finally {
      db.close();
    }
  });

  test.skipIf(!disk)("a unit whose pages spill to the full disk loses the whole transaction: its batch fails, nothing is left half done", async () => {
    disk!.free();
    const db = open(join(disk!.dir, "spill.db"));
    try {
      db.run("CREATE TABLE t (v INTEGER UNIQUE, pad TEXT)");
      db.run("PRAGMA cache_size = 10"); // a unit larger than the cache writes pages to the WAL before its COMMIT
      const commits = new GroupCommit(db, 1000, undefined, undefined, asStorageError);
      disk!.fill();
      const small = commits.run(() => db.run("INSERT INTO t VALUES (1, 'x')"));
      const large = commits.run(() => {
        for (let v = 2; v < 300; v++) db.run("INSERT INTO t VALUES (?, ?)", [v, "x".repeat(3000)]);
      });
      // SQLite rolled back the whole transaction, its savepoints with it: both fail, and the process goes on.
      for (const o of await Promise.allSettled([small, large])) expect(o).toMatchObject({ status: "rejected", reason: { reason: "disk full" } });
      expect(db.inTransaction).toBe(false);
      disk!.free();
      await commits.run(() => db.run("INSERT INTO t VALUES (1, 'x')"));
      expect(count(db)).toBe(1);
      expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    } finally {
      db.close();
    }
  });
});
