import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isBusy, whenUnlocked } from "./write-lock.ts";
import { LockSignal } from "./lock-signal.ts";
import { waitFor } from "../../../test/support/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(path: string) {
  const db = new Database(path, { create: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA busy_timeout = 5000");
  return db;
}

/** A table `t` on `db`, and `other`, a second connection to the same file holding the write lock. */
function lockedByAnother(name: string) {
  const path = join(dir, name);
  const db = open(path);
  db.run("CREATE TABLE t (v INTEGER)");
  const other = open(path);
  other.run("BEGIN IMMEDIATE");
  return { db, other };
}

test("a write waits for another connection's lock while the event loop goes on, then commits", async () => {
  const { db, other } = lockedByAnother("wait.db");
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  let tries = 0;
  let settled = false;
  const write = whenUnlocked(db, () => (tries++, db.run("INSERT INTO t (v) VALUES (1)"))).finally(() => (settled = true));
  // bun:sqlite's own busy handler would sleep on this thread for the connection's 5 s at each try: no timer could
  // fire meanwhile, and ten of them would take longer than the wait allows.
  await waitFor(() => ticks >= 10 && tries >= 3, 10_000, () => `${ticks} ticks and ${tries} tries`);
  expect(settled).toBe(false);
  other.run("COMMIT");
  await write;
  clearInterval(timer);
  expect(db.query<{ n: number }, []>("SELECT count(*) AS n FROM t").get()!.n).toBe(1);
  // The connection's own timeout is back for everything else.
  expect(db.query<{ timeout: number }, []>("PRAGMA busy_timeout").get()!.timeout).toBe(5000);
});

test("a write tells the lock signal once it has given the lock back; its busy tries do not", async () => {
  const { db, other } = lockedByAnother("signal.db");
  const signal = new LockSignal();
  let tries = 0;
  const write = whenUnlocked(db, () => (tries++, db.run("INSERT INTO t (v) VALUES (1)")), signal);
  await waitFor(() => tries >= 3, 10_000, () => `only ${tries} tries`);
  expect(signal.count).toBe(0);
  other.run("COMMIT");
  await write;
  expect(signal.count).toBe(1);
});

test("a lock held past the timeout fails the write with SQLITE_BUSY and changes nothing", async () => {
  const { db, other } = lockedByAnother("timeout.db");
  const error = await whenUnlocked(db, () => db.run("INSERT INTO t (v) VALUES (1)"), undefined, 30).catch((e) => e);
  other.run("ROLLBACK");
  expect(isBusy(error)).toBe(true);
  expect(db.query<{ n: number }, []>("SELECT count(*) AS n FROM t").get()!.n).toBe(0);
});

test("an error other than a busy lock is not retried", async () => {
  const db = open(join(dir, "other.db"));
  let calls = 0;
  const error = await whenUnlocked(db, () => {
    calls++;
    db.run("INSERT INTO missing (v) VALUES (1)");
  }).catch((e) => e);
  expect(String(error)).toContain("no such table");
  expect(calls).toBe(1);
});
