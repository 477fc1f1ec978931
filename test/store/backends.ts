/**
 * The store backends the conformance suite runs against; every suite under test/store passes for each. A suite
 * calls `storeBackends()` once at its top level: PostgreSQL's database is made for that file (and dropped after
 * it), and emptied before each test.
 */
import { afterAll } from "bun:test";
import { join } from "node:path";
import { tempFolder } from "../support/temp.ts";
import { openSqliteStore } from "../../src/store/sqlite/index.ts";
import { openPostgresStore } from "../../src/store/postgres/index.ts";
import type { Store } from "../../src/store/index.ts";
import type { Clock } from "../../src/lib/clock.ts";
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../support/postgres.ts";

export type Backend = {
  name: string;
  open(): Promise<Store>;
  /** SQLite writes a publish's deliveries later, from the delivery worker's claim, a slice at a time. */
  fansOutInClaims: boolean;
  /** Another instance's store on the database the last `open` made (PostgreSQL: instances share one). */
  /** A second instance on the same database; `clock` drives what it remembers (found API keys). */
  openAnother?(clock?: Clock): Promise<Store>;
};

const freshFile = () => join(tempFolder("fanout-store-"), "store.db");

const sqlite: Backend = {
  name: "sqlite",
  fansOutInClaims: true,
  async open() {
    return openSqliteStore(freshFile(), { durability: "normal" });
  },
};

/** Deleting the organizations cascades to everything else but the rows without a foreign key. */
const EMPTY = "DELETE FROM orgs; DELETE FROM events; DELETE FROM auth_failures; DELETE FROM idempotency_keys; DELETE FROM readiness";

function postgres(): Backend {
  let database: Promise<TestDatabase> | undefined;
  afterAll(async () => (await database)?.drop());
  return {
    name: "postgres",
    fansOutInClaims: false,
    async open() {
      const first = database === undefined;
      database ??= createTestDatabase();
      const db = await database;
      if (!first) await db.exec(EMPTY);
      return openPostgresStore(db.url, { pool: 4, role: "test", migrate: first });
    },
    async openAnother(clock?: Clock) {
      return openPostgresStore((await database!).url, { pool: 4, role: "test", migrate: false, clock });
    },
  };
}

const withPostgres = await postgresAvailable();

export function storeBackends(): Backend[] {
  return withPostgres ? [sqlite, postgres()] : [sqlite];
}
