import type { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema.ts";
import { BUSY_TIMEOUT_MS } from "./db.ts";
import { eventKeyMemo } from "./events.ts";
import { queueMemo } from "./queues.ts";
import { GroupCommit } from "./group-commit.ts";
import type { LockSignal } from "./lock-signal.ts";
import type { Conn, Db } from "./shared.ts";

/**
 * What the stores of one connection share: the Drizzle handle for reads, and `write`, which runs each unit of
 * work in that connection's group commit. The event-key and queue memos are cleared at every BEGIN (events.ts,
 * queues.ts). A busy BEGIN is retried when `signal` says another writer gave the lock back (lock-signal.ts).
 */
export function connect(sqlite: Database, signal?: LockSignal): Conn {
  const db = drizzle(sqlite, { schema }) as Db;
  const eventKeys = eventKeyMemo(sqlite);
  const queues = queueMemo(sqlite);
  const onBegin = () => {
    eventKeys.clear();
    queues.clear();
  };
  const commits = new GroupCommit(sqlite, BUSY_TIMEOUT_MS, onBegin, signal);
  return { db, write: (fn, options) => commits.run(() => fn(db), options?.alone) };
}
