import type { SQL } from "bun";
import { applyMigrations } from "./migrations.ts";
import { checkReachable, drizzleOf, openClient } from "./client.ts";
import { parsePostgresUrl, type PostgresTarget } from "./url.ts";
import { Writer } from "./writer.ts";
import { publishBatch, type Publish } from "./publish.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventStore } from "./events.ts";
import { deliveryStore } from "./deliveries.ts";
import { CHANGES_CHANNEL, type Change } from "./notifications.ts";
import { lockoutStore, type LockWatchers } from "./lockouts.ts";
import type { Conn } from "./shared.ts";
import { Leadership } from "./leader.ts";
import { LOCKS } from "./locks.ts";
import type { PublishedMessage, Store } from "../index.ts";
import { randomBase62 } from "../../lib/ids.ts";

export type PostgresOptions = {
  /** Connections of this store's pool. */
  pool: number;
  /** Names the connections in pg_stat_activity (`fanout <role>`). */
  role: string;
  migrate?: boolean;
};

export type PostgresStore = Store & {
  target: PostgresTarget;
  client: SQL;
  /** This process's name on the wake channel (notifications.ts). */
  instance: string;
};

/**
 * Connects (a wrong URL or a server that is down throws DatabaseUnreachable, client.ts), migrates under the
 * advisory lock unless told not to, and returns the Store. `location` is a URL that config.ts accepted.
 */
export async function openPostgresStore(location: string, options: PostgresOptions): Promise<PostgresStore> {
  const target = parsePostgresUrl(location);
  // Every statement is a prepared one over indexed keys: a generic plan, planned once per connection, serves them
  // all, where PostgreSQL's default planned the publish statement anew on most executions.
  const client = openClient(target, options.pool, options.role, { plan_cache_mode: "force_generic_plan" });
  try {
    await checkReachable(client, target);
    if (options.migrate !== false) await applyMigrations(client);
  } catch (e) {
    await client.close();
    throw e;
  }
  const db = drizzleOf(client);
  const instance = `i${randomBase62(10)}`;
  const writes = new Writer<Publish, PublishedMessage>((batch) => publishBatch(client, batch, instance));
  const conn: Conn = { db, client, write: (fn) => writes.alone(() => db.transaction(fn)) };
  const leadership = new Leadership(target, LOCKS.sweeps, options.role);
  const announce = (change: Change) => client.notify(CHANGES_CHANNEL, JSON.stringify(change)).catch(() => {
    // Another instance's cache then ages out by itself (api-keys.ts); the change itself is committed.
  });
  // What other instances change, heard from the first key lookup or lockout watcher on (a server's requests).
  const watchers: LockWatchers = [];
  const changed = (payload: string) => {
    const change = parseChange(payload);
    if (change?.kind === "keys") apiKeys.forget();
    if (change?.kind === "lock") for (const w of watchers) w.locked(change.address, change.until);
  };
  const resubscribed = () => {
    apiKeys.forget();
    for (const w of watchers) w.resync();
  };
  let subscription: Promise<unknown> | undefined;
  const subscribe = async () => void (await (subscription ??= client.listen(CHANGES_CHANNEL, changed, resubscribed)));
  const apiKeys = apiKeyStore(conn, () => void announce({ kind: "keys" }), () => {
    // Until it is up the cache's lifetime bounds staleness; a failure is tried again at the next lookup.
    if (!subscription) subscribe().catch(() => (subscription = undefined));
  });
  return {
    target,
    client,
    instance,
    orgs: orgStore(conn),
    apiKeys,
    lockouts: lockoutStore(client, watchers, subscribe),
    queues: queueStore(conn),
    listeners: listenerStore(conn),
    messages: messageStore(conn, (p) => writes.batched(p)),
    events: eventStore(db),
    deliveries: deliveryStore(client),
    async backup() {
      throw new Error("a PostgreSQL database is backed up with pg_dump");
    },
    leads: () => leadership.lead(),
    async close() {
      await leadership.close();
      await client.close({ timeout: 5 });
    },
  };
}

/** A notification on CHANGES, or null for a payload fanout did not send (a throw here would end the process). */
function parseChange(payload: string): Change | null {
  try {
    const change = JSON.parse(payload) as Change;
    return change?.kind === "keys" || (change?.kind === "lock" && typeof change.address === "string" && Number.isFinite(change.until)) ? change : null;
  } catch {
    return null; // not JSON: not ours
  }
}
