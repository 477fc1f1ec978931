import { existsSync, statSync } from "node:fs";
import { createPrivateFile, makePrivate, openDatabase, resolveLocation, removeTemporary, type Durability } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventStore } from "./events.ts";
import { idempotencyStore } from "./idempotency.ts";
import { deliveryStore } from "./deliveries.ts";
import { portalSessionStore } from "./portal-sessions.ts";
import type { Store } from "../index.ts";
import { connect } from "./conn.ts";
import { startCheckpoints } from "./checkpoints.ts";
import { startCheckpointThread } from "./checkpointer.ts";
import { LockSignal } from "./lock-signal.ts";
import { storeGauges } from "./gauges.ts";
import type { Logger } from "../../lib/log.ts";
import { LogEvents } from "../../lib/log-events.ts";
import { systemClock, type Clock } from "../../lib/clock.ts";
import { Outage } from "../outage.ts";
import { writeReadiness } from "./writability.ts";

/**
 * The WAL is kept bounded for every connection to the file by one timer (checkpoints.ts), so no connection
 * checkpoints inside its commits (db.ts). `checkpoints: "thread"` (the server) runs that timer on a thread of
 * its own (checkpointer.ts); by default it runs on this connection. `events` (else one made on `log`) gets the
 * storage errors of this connection's writes and of the checkpoints, once per cause, and their recovery: a write
 * the database refused starts an outage (store/outage.ts), probed on `clock` until a write commits again.
 */
export type SqliteOptions = {
  durability: Durability;
  migrate?: boolean;
  log?: Logger;
  events?: LogEvents;
  clock?: Clock;
  checkpoints?: "inline" | "thread";
};
/** `lockSignal` goes to every other thread that writes the file (the delivery worker): lock-signal.ts. */
export type SqliteStore = Store & { path: string; lockSignal: LockSignal };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  makePrivate(where.path);
  const sqlite = openDatabase(where.path, options.durability, where.temporary);
  try {
    if (options.migrate !== false) applyMigrations(sqlite);
  } catch (e) {
    sqlite.close(); // a refused database is left as it was found, without a -wal or -shm beside it
    throw e;
  }
  const lockSignal = new LockSignal();
  const events = options.events ?? (options.log && new LogEvents(options.log));
  const clock = options.clock ?? systemClock;
  const checkWritable = async (now: number) => conn.write((tx) => writeReadiness(tx.$client, now));
  const outage = new Outage({
    probe: () => checkWritable(clock.now()),
    report: { failed: (cause, error) => events?.storageError(cause, error, "writes"), recovered: (cause) => events?.storageRecovered(cause, "writes") },
  });
  const conn = connect(sqlite, lockSignal, outage);
  const checkpointReport = {
    failed: (cause: string, error: unknown) => events?.storageError(cause, error, "checkpoint"),
    recovered: (cause: string) => events?.storageRecovered(cause, "checkpoint"),
  };
  const problem = (msg: string, error: unknown) => options.log?.error(msg, error === null ? undefined : { error: String(error) });
  const thread = options.checkpoints === "thread"
    ? startCheckpointThread(sqlite, where.path, options.durability, where.temporary, lockSignal, checkpointReport, problem) : null;
  const stopCheckpoints = thread ? thread.stop : startCheckpoints(sqlite, where.path, checkpointReport);
  // On the checkpoint thread when there is one, so a large count never holds up requests; here otherwise.
  const gaugesHere = storeGauges(sqlite, where.path);
  const gauges = thread ? (now: number) => thread.gauges(now).catch(() => gaugesHere(now)) : gaugesHere;
  return {
    path: where.path,
    lockSignal,
    orgs: orgStore(conn),
    apiKeys: apiKeyStore(conn),
    queues: queueStore(conn),
    listeners: listenerStore(conn),
    messages: messageStore(conn),
    events: eventStore(conn),
    deliveries: deliveryStore(sqlite),
    idempotency: idempotencyStore(conn),
    portalSessions: portalSessionStore(conn),
    checkWritable,
    async compact() {
      // Rewrites the file without its free pages; it holds the write lock throughout (commands.ts runs it only
      // while no server holds the file).
      sqlite.run("VACUUM");
    },
    gauges,
    async backup(file) {
      // VACUUM INTO writes a consistent, compacted copy from one read transaction while writers go on. It accepts
      // an empty file, made first so the copy of the secrets is private from its first byte.
      if (existsSync(file) && statSync(file).size > 0) throw new Error(`${file} exists; a backup never overwrites a file`);
      createPrivateFile(file);
      sqlite.run("VACUUM INTO ?", [file]);
    },
    async close() {
      outage.stop();
      await stopCheckpoints();
      sqlite.close();
      removeTemporary(where);
    },
  };
}
