import type { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema.ts";
import { BUSY_TIMEOUT_MS } from "./db.ts";
import { eventKeys } from "./events.ts";
import { queueReads } from "./queues.ts";
import { messageSeqs } from "./fanout.ts";
import { GroupCommit } from "./group-commit.ts";
import type { LockSignal } from "./lock-signal.ts";
import type { Conn, Db } from "./shared.ts";
import { storageFailure } from "./writability.ts";
import type { Outage } from "../outage.ts";

/**
 * What the stores of one connection share: the Drizzle handle for reads, and `write`, which runs each unit of
 * work in that connection's group commit. The transaction memos (transaction-memo.ts) are cleared at every
 * BEGIN. A busy BEGIN is retried when `signal` says another writer gave the lock back (lock-signal.ts). A write
 * the database refused fails with StorageUnavailable (writability.ts), which `outage` is told about.
 */
export function connect(sqlite: Database, signal?: LockSignal, outage?: Outage): Conn {
  const db = drizzle(sqlite, { schema }) as Db;
  const memos = [eventKeys.of(sqlite), queueReads.of(sqlite), messageSeqs.of(sqlite)];
  const onBegin = () => memos.forEach((memo) => memo.clear());
  const failed = (error: unknown) => {
    const storage = storageFailure(error);
    if (!storage) return error;
    outage?.absorb(storage);
    return storage;
  };
  const commits = new GroupCommit(sqlite, BUSY_TIMEOUT_MS, onBegin, signal, failed);
  return { db, write: (fn, options) => commits.run(() => fn(db), options?.mode) };
}
