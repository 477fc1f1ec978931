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
import { PublishThread, type PublishThreadOptions } from "./publish-thread/client.ts";

/**
 * `publishThread`: publishes run on a thread of their own (publish-thread/), beside the caller's thread. That
 * thread's connection then keeps the WAL bounded (checkpoints.ts), so this one checkpoints nothing (db.ts);
 * without it, this connection checkpoints inside its commits as SQLite does by default.
 */
export type SqliteOptions = {
  durability: Durability;
  migrate?: boolean;
  publishThread?: Pick<PublishThreadOptions, "log" | "threadUrl">;
};
export type SqliteStore = Store & { path: string };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  const sqlite = openDatabase(where.path, options.durability, where.temporary, options.publishThread ? "elsewhere" : "auto");
  if (options.migrate !== false) applyMigrations(sqlite);
  const conn = connect(sqlite);
  const thread = options.publishThread
    ? new PublishThread({ ...options.publishThread, path: where.path, durability: options.durability, temporary: where.temporary })
    : null;
  const messages = thread ? { ...messageStore(conn), publish: thread.publish.bind(thread) } : messageStore(conn);
  return {
    path: where.path,
    orgs: orgStore(conn),
    apiKeys: apiKeyStore(conn),
    queues: queueStore(conn),
    listeners: listenerStore(conn),
    messages,
    events: eventStore(conn),
    deliveries: deliveryStore(sqlite),
    async backup(file) {
      // VACUUM INTO writes a consistent, compacted copy from one read transaction while writers go on.
      sqlite.run("VACUUM INTO ?", [file]);
    },
    async close() {
      await thread?.close();
      sqlite.close();
      removeTemporary(where);
    },
  };
}
