import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema.ts";
import { BUSY_TIMEOUT_MS, openDatabase, resolveLocation, removeTemporary, type Durability } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventKeyMemo, eventStore } from "./events.ts";
import { deliveryStore } from "./deliveries.ts";
import type { Store } from "../index.ts";
import { GroupCommit } from "./group-commit.ts";
import type { Conn } from "./shared.ts";

/** `checkpoints: "elsewhere"`: another connection (the delivery worker's) keeps the WAL bounded; see db.ts. */
export type SqliteOptions = { durability: Durability; migrate?: boolean; checkpoints?: "auto" | "elsewhere" };
export type SqliteStore = Store & { path: string };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  const sqlite = openDatabase(where.path, options.durability, where.temporary, options.checkpoints);
  if (options.migrate !== false) applyMigrations(sqlite);
  const db = drizzle(sqlite, { schema });
  const eventKeys = eventKeyMemo(sqlite);
  const commits = new GroupCommit(sqlite, BUSY_TIMEOUT_MS, () => eventKeys.forget());
  const conn: Conn = { db, write: (fn) => commits.run(() => fn(db)) };
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
      sqlite.close();
      removeTemporary(where);
    },
  };
}
