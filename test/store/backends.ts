/**
 * The store backends the conformance suite runs against. PostgreSQL joins this list when it exists; every
 * suite under test/store must pass for each backend.
 */
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { openSqliteStore } from "../../src/store/sqlite/index.ts";
import type { Store } from "../../src/store/index.ts";

export type Backend = { name: string; open(): Promise<Store> };

const freshFile = () => join(mkdtempSync(join(tmpdir(), "fanout-store-")), "store.db");

export const BACKENDS: Backend[] = [
  {
    name: "sqlite",
    async open() {
      return openSqliteStore(freshFile(), { durability: "normal" });
    },
  },
];
