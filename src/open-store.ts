/**
 * The store `--db` names, opened for `fanout serve`: a SQLite file (or `:memory:`), or a PostgreSQL URL. Besides
 * the Store, what the server needs to know about it: how to describe it at start, where a self-signed certificate
 * may be kept, and how the delivery worker reaches the same data.
 */
import { resolve } from "node:path";
import type { Config } from "./config.ts";
import type { Logger } from "./lib/log.ts";
import type { LogEvents } from "./lib/log-events.ts";
import type { Store } from "./store/index.ts";
import type { DeliveryOptions } from "./delivery/supervisor.ts";
import { openSqliteStore } from "./store/sqlite/index.ts";
import { openPostgresStore } from "./store/postgres/index.ts";
import { apiPool } from "./store/postgres/pool.ts";
import { describeTarget, isPostgresUrl } from "./store/postgres/url.ts";
import { lockServer } from "./store/sqlite/server-lock.ts";
import { systemClock } from "./lib/clock.ts";

export type ServedStore = {
  store: Store;
  /** Where the data is: the file (resolved), or the PostgreSQL URL without its password. */
  location: string;
  /** The start line's account of the database: the location and how it is used. */
  description: string;
  /** Where a generated certificate is kept (beside the database file), or in memory. */
  tls: { dbPath: string; temporary: boolean };
  delivery: Pick<DeliveryOptions, "dbPath" | "lockSignal" | "postgres">;
  /** Closes the store, and gives up what the server held besides it. */
  close(): Promise<void>;
};

/** `events` gets the storage errors of the store's writes, once per cause, and their recovery (store/outage.ts). */
export async function openServedStore(config: Config, log: Logger, events: LogEvents): Promise<ServedStore> {
  if (isPostgresUrl(config.db)) {
    const store = await openPostgresStore(config.db, { pool: apiPool(config.dbPool), role: "api", events });
    return {
      store,
      location: describeTarget(store.target),
      description: `${describeTarget(store.target)} (PostgreSQL, at most ${config.dbPool} connections)`,
      // Several instances share the database but not a directory: each makes its own certificate, in memory.
      tls: { dbPath: "", temporary: true },
      delivery: { dbPath: "", postgres: { url: config.db, instance: store.instance } },
      close: () => store.close(),
    };
  }
  const memory = config.db === ":memory:";
  // Before the store opens: a second server must not migrate, checkpoint or deliver from the file.
  const lock = memory ? null : lockServer(config.db, systemClock.now());
  let store;
  try {
    store = openSqliteStore(config.db, { durability: config.durability, log, events, checkpoints: "thread" });
  } catch (e) {
    lock?.release();
    throw e;
  }
  // No other process delivers from the file while the lock is held: every lease found belongs to a dead one.
  // (On PostgreSQL other instances hold leases of their own; those of a dead one expire and are rescued.)
  const released = await store.deliveries.releaseAll(systemClock.now());
  if (released > 0) log.info("sending again the deliveries a stopped server had in flight", { count: released });
  const location = memory ? "in memory (throwaway)" : resolve(store.path);
  return {
    store,
    location,
    description: `${location} (durability ${config.durability})`,
    tls: { dbPath: store.path, temporary: memory },
    delivery: { dbPath: store.path, lockSignal: store.lockSignal.buffer },
    async close() {
      await store.close();
      lock?.release();
    },
  };
}
