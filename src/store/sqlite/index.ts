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
import type { Store } from "../index.ts";
import { connect } from "./conn.ts";
import { startCheckpoints } from "./checkpoints.ts";
import { startCheckpointThread } from "./checkpointer.ts";
import { LockSignal } from "./lock-signal.ts";
import { storeGauges } from "./gauges.ts";
import type { Logger } from "../../lib/log.ts";

/**
 * The WAL is kept bounded for every connection to the file by one timer (checkpoints.ts), so no connection
 * checkpoints inside its commits (db.ts). `checkpoints: "thread"` (the server) runs that timer on a thread of
 * its own (checkpointer.ts); by default it runs on this connection. `log` gets a checkpoint that failed (it is
 * tried again).
 */
export type SqliteOptions = {
  durability: Durability;
  migrate?: boolean;
  log?: Logger;
  checkpoints?: "inline" | "thread";
};
/** `lockSignal` goes to every other thread that writes the file (the delivery worker): lock-signal.ts. */
export type SqliteStore = Store & { path: string; lockSignal: LockSignal };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  makePrivate(where.path);
  const sqlite = openDatabase(where.path, options.durability, where.temporary);
  if (options.migrate !== false) applyMigrations(sqlite);
  const lockSignal = new LockSignal();
  const conn = connect(sqlite, lockSignal);
  const report = (msg: string, error: unknown) => options.log?.error(msg, error === null ? undefined : { error: String(error) });
  const thread = options.checkpoints === "thread"
    ? startCheckpointThread(sqlite, where.path, options.durability, where.temporary, lockSignal, report) : null;
  const stopCheckpoints = thread
    ? thread.stop
    : startCheckpoints(sqlite, where.path, (error) => report("checkpoint failed; the next one tries again", error));
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
    async checkWritable(now) {
      await conn.write((tx) => {
        tx.$client.query("INSERT INTO readiness (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at").run(now);
      });
    },
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
      await stopCheckpoints();
      sqlite.close();
      removeTemporary(where);
    },
  };
}
