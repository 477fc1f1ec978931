/**
 * The PostgreSQL server the tests use: FANOUT_TEST_PG (default postgres://postgres@127.0.0.1:5432/test), where each
 * test file makes databases of its own and drops them after. Without a reachable server the PostgreSQL tests are
 * skipped with one line, except under CI=true, where a missing server fails the run.
 */
import { SQL } from "bun";
import { randomBase62 } from "../../src/lib/ids.ts";

export const TEST_PG_URL = process.env.FANOUT_TEST_PG || "postgres://postgres@127.0.0.1:5432/test";

function admin(database?: string): SQL {
  const url = new URL(TEST_PG_URL);
  return new SQL({
    adapter: "postgres", hostname: url.hostname, port: Number(url.port || 5432), username: decodeURIComponent(url.username) || "postgres",
    password: decodeURIComponent(url.password), database: database ?? (decodeURIComponent(url.pathname.slice(1)) || "postgres"), max: 2, connectionTimeout: 3,
  });
}

/** Runs `fn` with a client of the test database at `url` (one a server of the harness uses). */
export async function withTestDatabase<T>(url: string, fn: (sql: SQL) => Promise<T>): Promise<T> {
  const sql = admin(decodeURIComponent(new URL(url).pathname.slice(1)));
  try {
    return await fn(sql);
  } finally {
    await sql.close();
  }
}

let available: Promise<boolean> | undefined;

/** Whether the PostgreSQL tests run; asked once per process. */
export function postgresAvailable(): Promise<boolean> {
  available ??= (async () => {
    const sql = admin();
    try {
      await sql`SELECT 1`;
      await dropStale(sql);
      return true;
    } catch (e) {
      const why = `PostgreSQL is not reachable at FANOUT_TEST_PG (${TEST_PG_URL.replace(/:[^:@/]*@/, ":***@")}): ${(e as Error).message}`;
      if (process.env.CI === "true") throw new Error(`${why}; under CI=true the PostgreSQL tests must run`);
      console.warn(`skipping the PostgreSQL tests: ${why}`);
      return false;
    } finally {
      await sql.close();
    }
  })();
  return available;
}

const created = new Set<TestDatabase>();

/** Drops every database this process made and has not dropped yet (the preload calls it after the run). */
export async function dropCreatedDatabases(): Promise<void> {
  await Promise.all([...created].map((db) => db.drop()));
}

/** Databases of test processes that are gone (killed mid-run) are dropped before this one makes its own. */
async function dropStale(sql: SQL): Promise<void> {
  const rows: { datname: string }[] = await sql`SELECT datname FROM pg_database WHERE datname LIKE 'fanout\_test\_%'`;
  for (const { datname } of rows) {
    const pid = Number(datname.split("_")[2]);
    if (pid === process.pid || !Number.isInteger(pid) || alive(pid)) continue;
    await sql.unsafe(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // exists, owned by someone else
  }
}

export type TestDatabase = {
  url: string;
  name: string;
  /** Runs `text` (one or more statements) in this database. */
  exec(text: string): Promise<void>;
  drop(): Promise<void>;
};

/** A new, empty database on the test server; `drop` removes it (closing whatever still connects to it). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `fanout_test_${process.pid}_${randomBase62(8).toLowerCase()}`;
  const sql = admin();
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
    // The tests check behaviour, not the server's durability (the server is not crashed under them): commits
    // that skip the WAL flush keep the suite fast on a busy disk.
    await sql.unsafe(`ALTER DATABASE ${name} SET synchronous_commit = off`);
  } finally {
    await sql.close();
  }
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  const db: TestDatabase = {
    url: url.toString(),
    name,
    async exec(text) {
      const sql = admin(name);
      try {
        await sql.unsafe(text).simple();
      } finally {
        await sql.close();
      }
    },
    async drop() {
      created.delete(db);
      const sql = admin();
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await sql.close();
      }
    },
  };
  created.add(db);
  return db;
}
