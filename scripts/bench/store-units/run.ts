/**
 * Two ways of writing the listener store's units of work once for both backends, measured against the store as it
 * was (`*-base.ts`): A, each unit a generator over the backend's steps (units-a.ts, steps.ts, `*-A.ts`); B, the
 * decisions shared as plain functions and the statements kept per backend (plan-b.ts, `*-B.ts`).
 *
 * Listener creates, updates, gets and deletes through each variant of the listener store, on both backends, in
 * alternated rounds on the same database: the cost of how the store code is shared (docs/performance.md).
 * `bun scripts/bench/store-units/run.ts [n] [rounds] [sqlite|postgres]`; PostgreSQL on FANOUT_BENCH_PG (postgres-db.ts).
 */
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { openDatabase } from "../../../src/store/sqlite/db.ts";
import { applyMigrations as sqliteMigrate } from "../../../src/store/sqlite/migrations.ts";
import { connect } from "../../../src/store/sqlite/conn.ts";
import { orgStore as sqliteOrgs } from "../../../src/store/sqlite/orgs.ts";
import { queueStore as sqliteQueues } from "../../../src/store/sqlite/queues.ts";
import * as sBase from "./sqlite-base.ts";
import * as sA from "./sqlite-A.ts";
import * as sB from "./sqlite-B.ts";
import { openClient, drizzleOf } from "../../../src/store/postgres/client.ts";
import { parsePostgresUrl } from "../../../src/store/postgres/url.ts";
import { applyMigrations as pgMigrate } from "../../../src/store/postgres/migrations.ts";
import { Writer } from "../../../src/store/postgres/writer.ts";
import type { Conn as PgConn } from "../../../src/store/postgres/shared.ts";
import { orgStore as pgOrgs } from "../../../src/store/postgres/orgs.ts";
import { queueStore as pgQueues } from "../../../src/store/postgres/queues.ts";
import * as pBase from "./postgres-base.ts";
import * as pA from "./postgres-A.ts";
import * as pB from "./postgres-B.ts";
import { benchDatabase, benchPostgresReachable, dropBenchDatabases } from "../postgres-db.ts";
import type { Actor, ListenerStore, OrgStore, QueueStore } from "../../../src/store/index.ts";

const N = Number(process.argv[2] ?? 5000);
const ROUNDS = Number(process.argv[3] ?? 5);
const IN_FLIGHT = 32;
const ONLY = process.argv[4];
const actor: Actor = { keyId: "key_bench", keyName: "bench" };
const OPS = ["create", "update", "get", "delete"] as const;
type Op = (typeof OPS)[number];

type Backend<C> = { name: string; conn: C; orgs: (c: C) => OrgStore; queues: (c: C) => QueueStore; variants: Record<string, (c: C) => ListenerStore> };

type Spent = { wall: number; cpu: number };

/** One wave of IN_FLIGHT calls at once; its wall time and this process's CPU time, in µs. */
async function wave(from: number, fn: (i: number) => Promise<unknown>): Promise<Spent> {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const calls: Promise<unknown>[] = [];
  for (let i = from; i < Math.min(N, from + IN_FLIGHT); i++) calls.push(fn(i));
  await Promise.all(calls);
  const used = process.cpuUsage(cpu);
  return { wall: (performance.now() - start) * 1000, cpu: used.user + used.system };
}

type Call = (store: ListenerStore, ids: string[], i: number, tag: string) => Promise<unknown>;

/**
 * One round: each operation over N listeners per variant, the variants taking turns wave by wave (their order
 * rotating), so the machine's drifts fall on all of them alike. Returns µs per call, by variant and operation.
 */
async function round(stores: Record<string, ListenerStore>, orgId: string, queueId: string, r: number): Promise<Record<string, Record<Op, Spent>>> {
  let now = Date.now();
  const names = Object.keys(stores);
  const ids: Record<string, string[]> = Object.fromEntries(names.map((v) => [v, new Array<string>(N)]));
  const calls: Record<Op, Call> = {
    create: async (s, ids, i, tag) => {
      ids[i] = (await s.create(orgId, queueId, { name: `${tag}-${i}`, notifyUrl: "https://127.0.0.1/n", livenessUrl: "https://127.0.0.1/l", secret: "whsec_x" }, now++, actor)).id;
    },
    update: (s, ids, i, tag) => s.update(orgId, queueId, ids[i]!, { name: `${tag}-${i}-u`, enabled: false }, now++, actor),
    get: (s, ids, i) => s.get(orgId, queueId, ids[i]!),
    delete: (s, ids, i) => s.delete(orgId, queueId, ids[i]!, now++, actor),
  };
  const out = Object.fromEntries(names.map((v) => [v, Object.fromEntries(OPS.map((op) => [op, { wall: 0, cpu: 0 }]))])) as Record<string, Record<Op, Spent>>;
  for (const op of OPS) {
    for (let from = 0, k = 0; from < N; from += IN_FLIGHT, k++) {
      for (let j = 0; j < names.length; j++) {
        const v = names[(j + k + r + names.length) % names.length]!;
        const spent = await wave(from, (i) => calls[op](stores[v]!, ids[v]!, i, `${v}-${r}`));
        out[v]![op].wall += spent.wall / N;
        out[v]![op].cpu += spent.cpu / N;
      }
    }
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function run<C>(b: Backend<C>): Promise<void> {
  const org = await b.orgs(b.conn).create(`bench-${b.name}`, Date.now());
  const queue = await b.queues(b.conn).create(org.id, { name: "q", schema: null, schemaId: null }, Date.now(), actor);
  const names = Object.keys(b.variants);
  const stores = Object.fromEntries(names.map((v) => [v, b.variants[v]!(b.conn)]));
  await round(stores, org.id, queue.id, -1);
  const rounds: Record<string, Record<Op, Spent>>[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(await round(stores, org.id, queue.id, r));
  for (const op of OPS) {
    for (const kind of ["wall", "cpu"] as const) {
      const cells = names.map((v) => {
        const each = rounds.map((t) => t[v]![op][kind]);
        const ratios = rounds.map((t) => t[v]![op][kind] / t[names[0]!]![op][kind]);
        return `${v} ${median(each).toFixed(1)} µs ×${median(ratios).toFixed(3)} (${ratios.map((x) => x.toFixed(2)).join(" ")})`;
      });
      console.log(`${b.name} ${op} ${kind}: ${cells.join(" | ")}`);
    }
  }
}

if (ONLY !== "postgres") {
const dir = mkdtempSync(join(tmpdir(), "fanout-units-"));
try {
  const sqlite = openDatabase(join(dir, "bench.db"), "normal");
  sqliteMigrate(sqlite);
  await run({ name: "sqlite", conn: connect(sqlite), orgs: sqliteOrgs, queues: sqliteQueues,
    variants: { base: sBase.listenerStore, A: sA.listenerStore, B: sB.listenerStore } });
  sqlite.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
}

const unreachable = ONLY === "sqlite" ? "skipped" : await benchPostgresReachable();
if (unreachable) console.log(unreachable);
else {
  try {
    const url = await benchDatabase();
    const client = openClient(parsePostgresUrl(url), 4, "bench", { plan_cache_mode: "force_generic_plan" });
    await pgMigrate(client);
    const db = drizzleOf(client);
    const writes = new Writer<never, never>(async () => []);
    const conn: PgConn = { db, client, write: (fn) => writes.alone(() => db.transaction(fn)) };
    await run({ name: "postgres", conn, orgs: pgOrgs, queues: pgQueues, variants: { base: pBase.listenerStore, A: pA.listenerStore, B: pB.listenerStore } });
    await client.close();
  } finally {
    await dropBenchDatabases();
  }
}
