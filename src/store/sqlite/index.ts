import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema.ts";
import { openDatabase, resolveLocation, removeTemporary, type Durability } from "./db.ts";
import { applyMigrations } from "./migrations.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventStore } from "./events.ts";
import type { Store } from "../index.ts";

export type SqliteOptions = { durability: Durability; migrate?: boolean };
export type SqliteStore = Store & { path: string };

/** Opens (and by default migrates) the database at `location`: a file path, or `:memory:` for a throwaway one. */
export function openSqliteStore(location: string, options: SqliteOptions): SqliteStore {
  const where = resolveLocation(location);
  const sqlite = openDatabase(where.path, options.durability, where.temporary);
  if (options.migrate !== false) applyMigrations(sqlite);
  const db = drizzle(sqlite, { schema });
  return {
    path: where.path,
    orgs: orgStore(db),
    apiKeys: apiKeyStore(db),
    queues: queueStore(db),
    listeners: listenerStore(db),
    messages: messageStore(db),
    events: eventStore(db),
    deliveries: {},
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
