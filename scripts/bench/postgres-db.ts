/**
 * Databases for the bench's PostgreSQL section, on FANOUT_BENCH_PG (default: the test server, FANOUT_TEST_PG or
 * postgres://postgres@127.0.0.1:5432/test): each run makes its own (fanout_bench_<pid>_<n>, with the server's own
 * durability settings, unlike the tests') and drops them at the end; those of a bench process that is gone are
 * dropped first.
 */
import { SQL } from "bun";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cpuSeconds } from "./proc-stats.ts";

export const BENCH_PG_URL = process.env.FANOUT_BENCH_PG || process.env.FANOUT_TEST_PG || "postgres://postgres@127.0.0.1:5432/test";

function admin(): SQL {
  const url = new URL(BENCH_PG_URL);
  return new SQL({ adapter: "postgres", hostname: url.hostname, port: Number(url.port || 5432), username: decodeURIComponent(url.username) || "postgres",
    password: decodeURIComponent(url.password), database: decodeURIComponent(url.pathname.slice(1)) || "postgres", max: 1, connectionTimeout: 3 });
}

const made: string[] = [];

/** Whether the server answers; the section reports itself skipped when it does not. */
export async function benchPostgresReachable(): Promise<string | null> {
  const sql = admin();
  try {
    await sql`SELECT 1`;
    const rows: { datname: string }[] = await sql`SELECT datname FROM pg_database WHERE datname LIKE 'fanout\\_bench\\_%'`;
    for (const { datname } of rows) {
      const pid = Number(datname.split("_")[2]);
      if (pid && pid !== process.pid && !existsSync(`/proc/${pid}`)) await sql.unsafe(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
    return null;
  } catch (e) {
    return `PostgreSQL not reachable at FANOUT_BENCH_PG: ${(e as Error).message}`;
  } finally {
    await sql.close();
  }
}

/** A new database; its URL. */
export async function benchDatabase(): Promise<string> {
  const name = `fanout_bench_${process.pid}_${made.length}`;
  const sql = admin();
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.close();
  }
  made.push(name);
  const url = new URL(BENCH_PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropBenchDatabases(): Promise<void> {
  const sql = admin();
  try {
    for (const name of made.splice(0)) await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await sql.close();
  }
}

/** The server processes serving database `name` (their command line names it), by pid. */
function backends(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.startsWith("postgres: ") && cmdline.includes(` ${name} `)) pids.push(Number(entry));
    } catch {
      // the process ended while listing
    }
  }
  return pids;
}

/**
 * Starts metering the CPU of the database's server processes (on this machine only); the returned function gives
 * percent of one core since. Backends that start meanwhile count from their start, ones that end are lost.
 */
export function databaseCpu(url: string): () => number {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const before = new Map(backends(name).map((pid) => [pid, cpuSeconds(pid)]));
  const started = performance.now();
  return () => {
    let seconds = 0;
    for (const pid of backends(name)) seconds += cpuSeconds(pid) - (before.get(pid) ?? 0);
    return Math.round((seconds / ((performance.now() - started) / 1000)) * 1000) / 10;
  };
}
