import { openDatabase, resolveLocation, removeTemporary, type Durability } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventStore } from "./events.ts";
import { deliveryStore } from "./deliveries.ts";
import type { Store } from "../index.ts";
import { connect } from "./conn.ts";
import { startCheckpoints } from "./checkpoints.ts";
import type { Logger } from "../../lib/log.ts";

/**
 * This connection keeps the WAL bounded for every connection to the file, on a timer (checkpoints.ts), and so
 * checkpoints nothing inside its commits (db.ts). `log` gets a checkpoint that failed (it is tried again).
 */
export type SqliteOptions = {
  durability: Durability;
  migrate?: boolean;
  log?: Logger;
};
export type SqliteStore = Store & { path: string };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  const sqlite = openDatabase(where.path, options.durability, where.temporary);
  if (options.migrate !== false) applyMigrations(sqlite);
  const conn = connect(sqlite);
  const stopCheckpoints = startCheckpoints(sqlite, where.path, (error) =>
    options.log?.error("checkpoint failed; the next one tries again", { error: String(error) }));
  return {
    path: where.path,
    orgs: orgStore(conn),
    apiKeys: apiKeyStore(conn),
    queues: queueStore(conn),
    listeners: listenerStore(conn),
    messages: messageStore(conn),
    events: eventStore(conn),
    deliveries: deliveryStore(sqlite),
    async backup(file) {
      // VACUUM INTO writes a consistent, compacted copy from one read transaction while writers go on.
      sqlite.run("VACUUM INTO ?", [file]);
    },
    async close() {
      stopCheckpoints();
      sqlite.close();
      removeTemporary(where);
    },
  };
}
