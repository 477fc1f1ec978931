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
import { Outage } from "../outage.ts";
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
    lockouts: w(lockoutStore(client, watchers, subscribe)),
    queues: w(queueStore(conn)),
    listeners: w(listenerStore(conn)),
    messages: w(messageStore(conn, (p) => writes.batched(p))),
    events: w(eventStore(db)),
    deliveries,
    idempotency: w(idempotencyStore(conn)),
    checkWritable: (now) => checkWritable(now).catch((e) => watchedError(e, outage)),
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
      outage.stop();
      await leadership.close();
      await client.close({ timeout: 5 });
    },
  };
}

/**
 * `part` with every function's storage error (StorageUnavailable) told to `outage` on its way out, so an
 * unreachable server writes one log line however many requests fail on it (SQLite's store does this in its write
 * path, sqlite/conn.ts).
 */
function watched<T extends object>(part: T, outage: Outage): T {
  const out: Record<string, unknown> = {};
  const absorb = (e: unknown) => watchedError(e, outage);
  for (const [name, value] of Object.entries(part)) {
    if (typeof value !== "function") {
      out[name] = value;
      continue;
    }
    out[name] = (...args: unknown[]) => {
      try {
        const result = value.apply(part, args);
        return result instanceof Promise ? result.catch(absorb) : result;
      } catch (e) {
        return absorb(e);
      }
    };
  }
  return out as T;
}

function watchedError(e: unknown, outage: Outage): never {
  outage.absorb(e);
  throw e;
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
