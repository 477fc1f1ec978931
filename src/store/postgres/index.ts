import type { SQL } from "bun";
import { applyMigrations } from "./migrations.ts";
import { checkReachable, drizzleOf, openClient } from "./client.ts";
import { parsePostgresUrl, type PostgresTarget } from "./url.ts";
import { Writer } from "./writer.ts";
import { publishBatch, type Publish } from "./publish.ts";
import { FilterCache, filteredPublish } from "./publish-filters.ts";
import { orgStore } from "./orgs.ts";
import { apiKeyStore } from "./api-keys.ts";
import { queueStore } from "./queues.ts";
import { listenerStore } from "./listeners.ts";
import { messageStore } from "./messages.ts";
import { eventStore } from "./events.ts";
import { deliveryStore } from "./deliveries.ts";
import { changeFeed } from "./changes.ts";
import { lockoutStore } from "./lockouts.ts";
import { idempotencyStore } from "./idempotency.ts";
import { portalSessionStore } from "./portal-sessions.ts";
import { storeGauges } from "./gauges.ts";
import { guarded } from "./errors.ts";
import type { Conn } from "./shared.ts";
import { Leadership } from "./leader.ts";
import { LOCKS } from "./locks.ts";
import type { PublishedMessage, Store } from "../index.ts";
import { randomBase62 } from "../../lib/ids.ts";
import { Outage } from "../outage.ts";
import { watched, watchedError } from "./watched.ts";
import type { LogEvents } from "../../lib/log-events.ts";
import { systemClock, type Clock } from "../../lib/clock.ts";

export type PostgresOptions = {
  /** Connections of this store's pool. */
  pool: number;
  /** Names the connections in pg_stat_activity (`fanout <role>`). */
  role: string;
  migrate?: boolean;
  /**
   * Gets the storage errors of this store's calls (the server unreachable, out of disk), once per cause, and
   * their recovery: a call that fails so starts an outage (store/outage.ts), probed on `clock` until a write
   * commits again, as SQLite's store does.
   */
  events?: LogEvents;
  clock?: Clock;
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
  "auth_failures", "replays", "idempotency_keys", "readiness", "portal_sessions", "portal_session_listeners"];

/**
 * Connects (a wrong URL or a server that is down throws DatabaseUnreachable, client.ts), migrates under the
 * advisory lock unless told not to, and returns the Store. `location` is a URL that config.ts accepted.
 */
export async function openPostgresStore(location: string, options: PostgresOptions): Promise<PostgresStore> {
  const target = parsePostgresUrl(location);
  const client = await connect(target, options);
  const db = drizzleOf(client);
  const instance = `i${randomBase62(10)}`;
  const filters = new FilterCache(client);
  const writes = new Writer<Publish, PublishedMessage>((batch) => publishBatch(client, batch, instance, filters));
  const conn: Conn = { db, client, write: (fn) => writes.alone(() => db.transaction(fn)) };
  const leadership = new Leadership(target, LOCKS.sweeps, options.role);
  const feed = changeFeed(client);
  const apiKeys = apiKeyStore(conn, () => feed.announce({ kind: "keys" }), feed.start, options.clock ?? systemClock);
  feed.keys = apiKeys;
  const deliveries = deliveryStore(client);
  const checkWritable = deliveries.checkWritable;
  const events = options.events;
  const outage = new Outage({
    probe: () => checkWritable((options.clock ?? systemClock).now()),
    report: { failed: (cause, error) => events?.storageError(cause, error, "writes"), recovered: (cause) => events?.storageRecovered(cause, "writes") },
  });
  const w = <T extends object>(part: T) => watched(part, outage);
  return {
    target,
    client,
    instance,
    orgs: w(orgStore(conn)),
    apiKeys: w(apiKeys),
    lockouts: w(lockoutStore(client, feed.watchers, feed.subscribe)),
    queues: w(queueStore(conn)),
    listeners: w(listenerStore(conn)),
    messages: w(messageStore(conn, filteredPublish(filters, (p) => writes.batched(p)))),
    events: w(eventStore(db)),
    deliveries,
    idempotency: w(idempotencyStore(conn)),
    portalSessions: w(portalSessionStore(conn)),
    checkWritable: (now) => checkWritable(now).catch((e) => watchedError(e, outage)),
    gauges: storeGauges(client),
    async backup() {
      throw new Error("a PostgreSQL database is backed up with pg_dump");
    },
    ...administration(client),
    leads: () => leadership.lead(),
    async close() {
      outage.stop();
      await leadership.close();
      await client.close({ timeout: 5 });
    },
  };
}

/** The API's pool, reachable and migrated (unless told not to). */
async function connect(target: PostgresTarget, options: PostgresOptions): Promise<SQL> {
  // Every statement is a prepared one over indexed keys: a generic plan, planned once per connection, serves them
  // all, where PostgreSQL's default planned the publish statement anew on most executions.
  const client = openClient(target, options.pool, options.role, { plan_cache_mode: "force_generic_plan" });
  try {
    await checkReachable(client, target);
    if (options.migrate !== false) await applyMigrations(client);
    return client;
  } catch (e) {
    await client.close();
    throw e;
  }
}

/** What `fanout compact` asks of the database as a whole. */
function administration(client: SQL): Pick<PostgresStore, "compact" | "otherSessions" | "databaseBytes"> {
  return {
    // Rewrites each table without its dead rows, locking it meanwhile (commands.ts runs it with no instance connected).
    compact: () => guarded(async () => void (await client.unsafe(`VACUUM (FULL, ANALYZE) ${TABLES.join(", ")}`))),
    otherSessions: () =>
      guarded(async () => {
        const [row] = await client`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()
          AND application_name LIKE 'fanout %' AND application_name NOT LIKE 'fanout command%' AND pid <> pg_backend_pid()`;
        return Number(row.n);
      }),
    databaseBytes: () => guarded(async () => Number((await client`SELECT pg_database_size(current_database()) AS n`)[0].n)),
  };
}
