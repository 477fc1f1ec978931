/**
 * A database that a newer fanout migrated is refused by every command that opens it, on the backend the suite runs
 * on (FANOUT_TEST_BACKEND): exit 2, one line naming both versions and the way back, and the database left as it
 * was. A newer migration is faked as a newer fanout leaves one: a row in drizzle's bookkeeping dated after the
 * newest migration this fanout carries. An older database is migrated as before, and records which fanout did it.
 */
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { BACKEND, cli, freshDatabase, ROOT, startFanout, waitFor } from "./harness.ts";
import { withTestDatabase } from "../support/postgres.ts";
import { migrations as sqliteMigrations } from "../../src/store/sqlite/migrations.gen.ts";
import { migrations as postgresMigrations } from "../../src/store/postgres/migrations.gen.ts";
import { LOCK_NAMESPACE, LOCKS } from "../../src/store/postgres/locks.ts";

const postgres = BACKEND === "postgres";
const migrations = postgres ? postgresMigrations : sqliteMigrations;
const BOOKKEEPING = postgres ? "drizzle.__drizzle_migrations" : "__drizzle_migrations";
/** A day after the newest migration this fanout knows: what the next release's migration would be dated. */
const LATER = migrations.at(-1)!.when + 86_400_000;
const NEWER_FANOUT = "9.9.9 (fffffff)";

/** Runs `statements` in the database `db` (a file or a PostgreSQL URL), or reads the rows of the last. */
async function sql(db: string, ...statements: string[]): Promise<Record<string, unknown>[]> {
  if (postgres) {
    return withTestDatabase(db, async (client) => {
      let rows: Record<string, unknown>[] = [];
      for (const text of statements) rows = [...(await client.unsafe(text))];
      return rows;
    });
  }
  const file = new Database(db, { create: true, strict: true });
  try {
    let rows: Record<string, unknown>[] = [];
    for (const text of statements) rows = file.query<Record<string, unknown>, []>(text).all();
    return rows;
  } finally {
    file.close();
  }
}

/** Everything in the database: every table's columns and rows (PostgreSQL), or the file's bytes (SQLite). */
async function snapshot(db: string): Promise<unknown> {
  if (!postgres) return { file: new Bun.CryptoHasher("sha256").update(await Bun.file(db).bytes()).digest("hex"), wal: await Bun.file(`${db}-wal`).exists() };
  const tables = await sql(db, `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
    WHERE table_schema IN ('public', 'drizzle') ORDER BY 1`);
  const columns = await sql(db, `SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns
    WHERE table_schema IN ('public', 'drizzle') ORDER BY 1, 2, 3`);
  const rows = [];
  for (const { name } of tables) rows.push(await sql(db, `SELECT coalesce(json_agg(t ORDER BY t::text), '[]') AS rows FROM ${name} t`));
  return { tables, columns, rows };
}

/** A database at this fanout's migrations (made by `fanout migrate`), and one row dated later from a newer fanout. */
async function newerDatabase(version: string | null = NEWER_FANOUT): Promise<string> {
  const db = await freshDatabase();
  expect((await cli(["migrate", "--db", db])).code).toBe(0);
  await sql(db, `INSERT INTO ${BOOKKEEPING} (hash, created_at, fanout_version) VALUES ('from-a-newer-fanout', ${LATER}, ${version ? `'${version}'` : "NULL"})`);
  return db;
}

/** `fanout <args>` from source, killed if it has not exited within 20 s (a server that was not refused). */
async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, FANOUT_HOST: "127.0.0.1", FANOUT_PORT: "0" };
  const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], { env, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

const thisFanout = async () => (await cli(["version"])).stdout.trim().replace(/^fanout /, "");
const named = (db: string) => (postgres ? `${new URL(db).pathname.slice(1)} (PostgreSQL)` : db);
const refusal = (db: string, by: string, me: string) =>
  `fanout: the database ${named(db)} was migrated by ${by}, newer than this fanout ${me}: 1 of its migrations is unknown here; ` +
  "run the newer fanout, or restore a backup taken before the upgrade\n";

describe(`a database migrated by a newer fanout (${BACKEND})`, () => {
  test("serve and every command that opens it exit 2 with one line naming both versions, and change nothing", async () => {
    const [db, me] = await Promise.all([newerDatabase(), thisFanout()]);
    const before = await snapshot(db);
    const commands = [["serve"], ["migrate"], ["orgs", "list"], ["orgs", "create", "com.example.late"], ["compact"]];
    if (!postgres) commands.push(["backup", `${db}.backup`]);
    for (const command of commands) {
      const result = await run([...command, "--db", db]);
      expect({ command, ...result }).toEqual({ command, code: 2, stdout: "", stderr: refusal(db, `fanout ${NEWER_FANOUT}`, me) });
    }
    expect(await snapshot(db)).toEqual(before);
    if (!postgres) expect(await Bun.file(`${db}.backup`).exists()).toBe(false);
  });

  test("without a recorded version the line still names this fanout and says a newer one migrated it", async () => {
    const [db, me] = await Promise.all([newerDatabase(null), thisFanout()]);
    const result = await run(["serve", "--db", db]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(refusal(db, "a fanout", me).replace(`a fanout, newer than this fanout ${me}`, `a fanout newer than this one, ${me}`));
  });

  test("an older database is migrated as before and records which fanout applied each migration; at this fanout's migrations it starts", async () => {
    const db = await freshDatabase();
    const [first] = migrations;
    // The first migration alone, recorded as drizzle records it (no version column yet): the first release's schema.
    const bookkeeping = postgres
      ? ["CREATE SCHEMA drizzle", "CREATE TABLE drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)"]
      : ["CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)"];
    const schema = first!.sql.split("--> statement-breakpoint").filter((s) => s.trim());
    await sql(db, ...bookkeeping, ...schema, `INSERT INTO ${BOOKKEEPING} (hash, created_at) VALUES ('first', ${first!.when})`);
    const me = await thisFanout();
    const applied = () => sql(db, `SELECT created_at, fanout_version FROM ${BOOKKEEPING} ORDER BY created_at`);
    const expected = migrations.map((m, i) => ({ created_at: postgres ? String(m.when) : m.when, fanout_version: i === 0 ? null : me }));

    const older = await startFanout({ db });
    expect(await older.stop()).toBe(0);
    expect(await applied()).toEqual(expected);

    const current = await startFanout({ db, env: { FANOUT_BOOTSTRAP_KEY: older.key } });
    expect((await current.call("h1", "GET", "/v1/queues")).status).toBe(200);
    expect(await current.stop()).toBe(0);
    expect(await applied()).toEqual(expected);
  });
});

describe.if(postgres)("instances starting together on PostgreSQL", () => {
  test("an instance that waited for the migration lock refuses the schema a newer instance made meanwhile", async () => {
    const db = await freshDatabase();
    expect((await cli(["migrate", "--db", db])).code).toBe(0);
    const me = await thisFanout();
    await withTestDatabase(db, async (client) => {
      // The test plays the newer instance: it holds the lock while the older one starts, migrates, and lets go.
      const newer = await client.reserve();
      try {
        await newer`SELECT pg_advisory_lock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
        const older = run(["serve", "--db", db]);
        await waitFor(async () => (await client`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
          AND classid = ${LOCK_NAMESPACE} AND objid = ${LOCKS.migrate}
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).length > 0, 20_000, () => "the older instance never waited for the lock");
        await newer.unsafe(`INSERT INTO ${BOOKKEEPING} (hash, created_at, fanout_version) VALUES ('from-a-newer-fanout', ${LATER}, '${NEWER_FANOUT}')`);
        await newer`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${LOCKS.migrate})`;
        expect(await older).toEqual({ code: 2, stdout: "", stderr: refusal(db, `fanout ${NEWER_FANOUT}`, me) });
      } finally {
        newer.release();
      }
    });
  });
});
