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
import { idempotencyStore } from "./idempotency.ts";
import { storeGauges } from "./gauges.ts";
import { guarded } from "./errors.ts";
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
  /** Sessions of other fanout processes connected to the database now (compact refuses while there are any). */
  otherSessions(): Promise<number>;
  databaseBytes(): Promise<number>;
};

/** fanout's tables, which compact rewrites (the database may hold others'). */
const TABLES = ["orgs", "api_keys", "queues", "listeners", "messages", "deliveries", "attempts", "events", "event_keys",
  "auth_failures", "replays", "idempotency_keys", "readiness"];

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
    idempotency: idempotencyStore(conn),
    checkWritable: (now) =>
      guarded(async () => {
        await client`INSERT INTO readiness (id, checked_at) VALUES (1, ${now}) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at`;
      }),
    gauges: storeGauges(client),
    async backup() {
      throw new Error("a PostgreSQL database is backed up with pg_dump");
    },
    // Rewrites each table without its dead rows, locking it meanwhile (commands.ts runs it with no instance connected).
    compact: () => guarded(async () => void (await client.unsafe(`VACUUM (FULL, ANALYZE) ${TABLES.join(", ")}`))),
    otherSessions: () =>
      guarded(async () => {
        const [row] = await client`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()
          AND application_name LIKE 'fanout %' AND application_name NOT LIKE 'fanout command%' AND pid <> pg_backend_pid()`;
        return Number(row.n);
      }),
    databaseBytes: () => guarded(async () => Number((await client`SELECT pg_database_size(current_database()) AS n`)[0].n)),
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
