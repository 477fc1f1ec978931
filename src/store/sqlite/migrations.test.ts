import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations } from "./migrations.ts";
import { migrations } from "./migrations.gen.ts";
import { openDatabase } from "./db.ts";
import { deliveryStore } from "./deliveries.ts";
import { DatabaseTooNew } from "../newer-database.ts";
import { fullVersion } from "../../version.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A database as the first release left it: only migration 0000 applied, with rows that refer to each other. */
function firstReleaseDatabase(): Database {
  const dir = mkdtempSync(join(tmpdir(), "fanout-migrate-"));
  dirs.push(dir);
  const db = openDatabase(join(dir, "old.db"), "normal");
  db.run(`CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  for (const stmt of migrations[0]!.sql.split("--> statement-breakpoint")) if (stmt.trim()) db.run(stmt);
  db.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('h', ?)", [migrations[0]!.when]);
  db.run("INSERT INTO orgs (id, name, created_at) VALUES ('org_1', 'a.example', 1)");
  db.run("INSERT INTO queues (id, org_id, name, created_at) VALUES ('q_1', 'org_1', 'q', 1)");
  db.run(`INSERT INTO listeners (id, org_id, queue_id, name, notify_url, liveness_url, secret, liveness_state, next_probe_at, created_at)
    VALUES ('l_1', 'org_1', 'q_1', 'l', 'http://127.0.0.1/n', 'http://127.0.0.1/h', 's', 'stable', 0, 1)`);
  for (let i = 1; i <= 3; i++) {
    db.run("INSERT INTO messages (id, org_id, queue_id, name, data, created_at) VALUES (?, 'org_1', 'q_1', NULL, '{}', 1)", [`m_${i}`]);
    db.run(`INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at)
      VALUES ('org_1', ?, 1, 'pending', 1, 5, 1, 1)`, [i]);
    db.run("INSERT INTO attempts (delivery_id, attempt, attempted_at, status_code, duration_ms) VALUES (?, 1, 2, 500, 3)", [i]);
  }
  return db;
}

const count = (db: Database, table: string) => db.query<{ n: number }, []>(`SELECT count(*) AS n FROM ${table}`).get()!.n;

test("upgrading keeps every message, delivery and attempt, and the cascades still hold", () => {
  const db = firstReleaseDatabase();
  expect(applyMigrations(db)).toBe(migrations.length - 1);
  expect([count(db, "messages"), count(db, "deliveries"), count(db, "attempts")]).toEqual([3, 3, 3]);
  const keys = db.query<{ id: number; message_seq: number }, []>("SELECT id, message_seq FROM deliveries ORDER BY id").all();
  expect(keys).toEqual([{ id: 1, message_seq: 1 }, { id: 2, message_seq: 2 }, { id: 3, message_seq: 3 }]);
  // The hot tables lost AUTOINCREMENT (its sqlite_sequence update is paid on every insert: docs/performance.md).
  const sql = db.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name IN ('messages', 'deliveries', 'attempts')").all();
  expect(sql.length).toBe(3);
  for (const { sql: text } of sql) expect(text).not.toContain("AUTOINCREMENT");
  // Foreign keys are back on, and the rebuilt tables still cascade.
  expect(db.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()!.foreign_keys).toBe(1);
  db.run("DELETE FROM messages WHERE id = 'm_2'");
  expect([count(db, "deliveries"), count(db, "attempts")]).toEqual([2, 2]);
  db.close();
});

test("upgrading puts the fan-out cursor past the messages there, whose deliveries exist: none is fanned out twice", async () => {
  const db = firstReleaseDatabase();
  applyMigrations(db);
  expect(db.query("SELECT id, message_seq FROM fanout").all()).toEqual([{ id: 1, message_seq: 3 }]);
  expect(db.query("SELECT from_seq FROM listeners").all()).toEqual([{ from_seq: 0 }]);
  const claim = await deliveryStore(db).claimDue({ owner: "w", leaseMs: 1000, limit: 100, perListener: 100, busy: new Map() }, 10);
  expect(claim.claimed.map((c) => c.message.id)).toEqual(["m_1", "m_2", "m_3"]);
  expect(count(db, "deliveries")).toBe(3);
  db.close();
});

test("a migration that would leave dangling references is rolled back whole", () => {
  const db = firstReleaseDatabase();
  db.run("PRAGMA foreign_keys = OFF");
  db.run("INSERT INTO attempts (delivery_id, attempt, attempted_at, duration_ms) VALUES (99, 1, 2, 3)"); // no delivery 99
  db.run("PRAGMA foreign_keys = ON");
  expect(() => applyMigrations(db)).toThrow(/foreign keys point nowhere/);
  const applied = db.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get()!.n;
  expect(applied).toBe(1);
  expect(db.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name = 'messages'").get()!.sql).toContain("AUTOINCREMENT");
  expect(db.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()!.foreign_keys).toBe(1);
  db.close();
});

test("a database already up to date opens without reading every row: a dangling reference does not stop it", () => {
  const db = firstReleaseDatabase();
  applyMigrations(db);
  db.run("PRAGMA foreign_keys = OFF");
  db.run("INSERT INTO attempts (delivery_id, attempt, attempted_at, duration_ms) VALUES (99, 1, 2, 3)"); // no delivery 99
  db.run("PRAGMA foreign_keys = ON");
  expect(applyMigrations(db)).toBe(0);
  db.close();
});

test("applying again changes nothing", () => {
  const db = firstReleaseDatabase();
  applyMigrations(db);
  expect(applyMigrations(db)).toBe(0);
  expect(count(db, "messages")).toBe(3);
  db.close();
});

test("each migration applied records the fanout that applied it; rows from before stay without one", () => {
  const db = firstReleaseDatabase();
  applyMigrations(db);
  const rows = db.query<{ created_at: number; fanout_version: string | null }, []>("SELECT created_at, fanout_version FROM __drizzle_migrations ORDER BY id").all();
  expect(rows).toEqual(migrations.map((m, i) => ({ created_at: m.when, fanout_version: i === 0 ? null : fullVersion() })));
  db.close();
});

test("a database with a migration dated after this fanout's newest is refused before anything is written", () => {
  const db = firstReleaseDatabase();
  const later = migrations.at(-1)!.when + 1;
  db.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('newer', ?)", [later]);
  const schema = () => db.query("SELECT name, sql FROM sqlite_master ORDER BY name").all();
  const before = schema();
  expect(() => applyMigrations(db)).toThrow(DatabaseTooNew);
  // Not even the version column: the refused database is the one a newer fanout left.
  expect(schema()).toEqual(before);
  expect(db.inTransaction).toBe(false);
  expect(db.query<{ foreign_keys: number }, []>("PRAGMA foreign_keys").get()!.foreign_keys).toBe(1);
  db.close();
});

test("the refusal names the fanout that applied the newest migration it records", () => {
  const db = firstReleaseDatabase();
  applyMigrations(db);
  const newest = migrations.at(-1)!.when;
  db.run("INSERT INTO __drizzle_migrations (hash, created_at, fanout_version) VALUES ('a', ?, '0.2.0 (aaaaaaa)'), ('b', ?, NULL)", [newest + 1, newest + 2]);
  expect(() => applyMigrations(db)).toThrow(
    `the database ${db.filename} was migrated by fanout 0.2.0 (aaaaaaa), newer than this fanout ${fullVersion()}: 2 of its migrations are unknown here; ` +
      "run the newer fanout, or restore a backup taken before the upgrade",
  );
  db.close();
});
