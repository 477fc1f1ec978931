/**
 * Drizzle schema of the PostgreSQL backend, the same tables as the SQLite one (store/sqlite/schema.ts) where the
 * two agree. drizzle-kit generates drizzle/postgres/*.sql from this file (`npm run db:generate`); the SQL is
 * embedded into the binary by store/postgres/migrations.ts.
 *
 * Where they differ:
 * - Times are epoch milliseconds in `bigint` (they outgrow `integer`); `seq` and delivery ids are identity columns.
 * - A publish writes its deliveries itself (publish.ts), so there is no fan-out cursor and no `from_seq`: a
 *   listener gets the messages whose publishing statement saw it.
 * - Usage events are keyed under a per-organization row lock (`event_keys`, events.ts) instead of SQLite's one
 *   writer, and their ids compare byte by byte (collation "C") whatever the database's collation.
 * - Failed authentications are counted here (`auth_failures`), so a lockout holds across instances.
 * - The rows written for every message (messages, deliveries, attempts) have no foreign keys: PostgreSQL checks
 *   one with a query per inserted row, which locks the parent row (docs/postgres.md has what dropping the four
 *   gained). Deletes still cascade, by statement-level triggers (the migration
 *   that dropped the keys, drizzle/postgres/0001_cascade_triggers.sql), and inserts cannot orphan a row: a
 *   message and its deliveries are written by one statement that locks the queue and the listeners it reads
 *   (publish.ts), and an attempt by the statement that settles its delivery.
 * - JSON the store only writes through SQL (`missed`) is `jsonb`; JSON handed over from JavaScript stays `text`,
 *   exactly as given (Drizzle's jsonb() would be stored double-encoded through Bun's client).
 */
import { sql } from "drizzle-orm";
import { bigint, boolean, customType, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";

const ms = (name: string) => bigint(name, { mode: "number" });
const seq = (name: string) => bigint(name, { mode: "number" }).primaryKey().generatedByDefaultAsIdentity();
/**
 * Text that sorts byte by byte whatever the database's collation: event ids are a paging cursor, and message ids
 * start with their creation time (lib/ids.ts), which retention and replays read as ranges of the id index.
 */
const bytewise = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' });
const bytea = customType<{ data: Uint8Array }>({ dataType: () => "bytea" });

export const orgs = pgTable("orgs", {
  id: text("id").primaryKey(),
  // Insertion order, for listing (SQLite lists by rowid).
  seq: bigint("seq", { mode: "number" }).notNull().generatedByDefaultAsIdentity(),
  name: text("name").notNull().unique(),
  // The queue its usage events are also published to (docs/api.md, "Operational messages"); cleared with it.
  eventsQueueId: text("events_queue_id"),
  createdAt: ms("created_at").notNull(),
});

export const apiKeys = pgTable(
  "api_keys",
  {
    seq: seq("seq"),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    status: text("status", { enum: ["enabled", "disabled"] }).notNull(),
    scopes: text("scopes").notNull(),
    keyHash: text("key_hash").notNull().unique(),
    owner: boolean("owner").notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [index("api_keys_org").on(t.orgId, t.seq)],
);

export const queues = pgTable(
  "queues",
  {
    seq: seq("seq"),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    schema: text("schema"),
    schemaId: text("schema_id"),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [uniqueIndex("queues_org_name").on(t.orgId, t.name)],
);

export const listeners = pgTable(
  "listeners",
  {
    seq: seq("seq"),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull(),
    queueId: text("queue_id").notNull().references(() => queues.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    notifyUrl: text("notify_url").notNull(),
    livenessUrl: text("liveness_url").notNull(),
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretUntil: ms("previous_secret_until"),
    livenessState: text("liveness_state", { enum: ["pending", "stable", "unstable", "down"] }).notNull(),
    successCount: ms("success_count").notNull().default(0),
    failureCount: ms("failure_count").notNull().default(0),
    failuresInRow: integer("failures_in_row").notNull().default(0),
    nextProbeAt: ms("next_probe_at").notNull(),
    downSince: ms("down_since"),
    // Kept on the row, changed by the statement of the delivery transition that causes them: GET stays O(1).
    acknowledgedCount: ms("acknowledged_count").notNull().default(0),
    missedCount: ms("missed_count").notNull().default(0),
    missed: jsonb("missed").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    // Paused (false): its deliveries are held as while it is down; a 410 Gone from its receiver pauses it.
    enabled: boolean("enabled").notNull().default(true),
    // What it receives and how it is called (docs/api.md, "Listeners"): JSON text as saved, NULL for none.
    // `filter_rev` changes with every change of the filter: a publish evaluated against an older one is redone
    // (publish.ts).
    filter: text("filter"),
    filterRev: ms("filter_rev").notNull().default(0),
    headers: text("headers"),
    // Its pace and order (docs/delivery.md, "Pace and order"): NULL takes the server's defaults.
    rateLimit: integer("rate_limit"),
    concurrency: integer("concurrency"),
    ordering: text("ordering", { enum: ["unordered", "fifo"] }).notNull().default("unordered"),
    // The start time the next claimed delivery of a rate-limited listener may take, for every instance (pace.ts).
    rateNextAt: ms("rate_next_at").notNull().default(0),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("listeners_queue_name").on(t.queueId, t.name),
    index("listeners_org").on(t.orgId, t.seq),
    index("listeners_probe").on(t.nextProbeAt),
  ],
);

export const messages = pgTable(
  "messages",
  {
    seq: seq("seq"),
    id: bytewise("id").notNull().unique(),
    orgId: text("org_id").notNull(),
    // Cascaded from queues by a trigger, not a foreign key (the module comment).
    queueId: text("queue_id").notNull(),
    name: text("name"),
    // The JSON text as published, spliced into the payload as is.
    data: text("data").notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [index("messages_queue").on(t.queueId, t.seq), index("messages_org").on(t.orgId, t.seq)],
);

export const deliveries = pgTable(
  "deliveries",
  {
    id: seq("id"),
    orgId: text("org_id").notNull(),
    // Cascaded from messages and listeners by triggers, not foreign keys (the module comment).
    messageSeq: ms("message_seq").notNull(),
    listenerSeq: ms("listener_seq").notNull(),
    state: text("state", { enum: ["pending", "sending", "acknowledged", "missed"] }).notNull(),
    attempt: integer("attempt").notNull().default(0),
    nextAttemptAt: ms("next_attempt_at"),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: ms("lease_expires_at"),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    // Set when the delivery first waited for its listener to come back up (next_attempt_at NULL meanwhile).
    heldSince: ms("held_since"),
    // 1 for the delivery a publish made; a redelivery or replay starts the next cycle, with a fresh schedule.
    cycle: integer("cycle").notNull().default(1),
    // 1: its listener is FIFO, so it waits in the listener's line (docs/delivery.md, "Pace and order").
    line: integer("line").notNull().default(0),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
  },
  (t) => [
    // A FIFO listener's line by state: its head (the oldest pending) and whether one is in flight, each one step
    // down. Only FIFO rows, final ones included: a condition on the state would keep SQLite from using it for them.
    index("deliveries_line").on(t.listenerSeq, t.state, t.messageSeq).where(sql`line = 1`),
    // One delivery per message and listener; also the index the cascade from a deleted message uses.
    uniqueIndex("deliveries_message_listener").on(t.messageSeq, t.listenerSeq),
    // The cascade from a deleted listener; a replay's window of messages is one range of it.
    index("deliveries_listener").on(t.listenerSeq, t.messageSeq),
    // Partial indexes, one per phase (as in SQLite): due rows in claim order, a listener's due rows, leases, holds.
    index("deliveries_due").on(t.nextAttemptAt, t.id).where(sql`state = 'pending'`),
    index("deliveries_listener_due").on(t.listenerSeq, t.nextAttemptAt, t.id).where(sql`state = 'pending'`),
    index("deliveries_lease").on(t.leaseExpiresAt).where(sql`state = 'sending'`),
    index("deliveries_held").on(t.heldSince).where(sql`held_since IS NOT NULL`),
  ],
);

export const attempts = pgTable(
  "attempts",
  {
    id: seq("id"),
    // Cascaded from deliveries by a trigger, not a foreign key (the module comment).
    deliveryId: ms("delivery_id").notNull(),
    attempt: integer("attempt").notNull(),
    // The delivery's cycle when this attempt was made (deliveries.cycle).
    cycle: integer("cycle").notNull().default(1),
    attemptedAt: ms("attempted_at").notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    response: text("response"),
  },
  (t) => [index("attempts_delivery").on(t.deliveryId)],
);

/** (org_id, stored_at, id) serves paging and the per-organization sweep, and is the key. */
export const events = pgTable(
  "events",
  {
    id: bytewise("id").notNull(),
    orgId: text("org_id").notNull(),
    type: text("type").notNull(),
    storedAt: ms("stored_at").notNull(),
    apiKeyId: text("api_key_id"),
    apiKeyName: text("api_key_name"),
    queueId: text("queue_id"),
    queueName: text("queue_name"),
    listenerId: text("listener_id"),
    listenerName: text("listener_name"),
    messageId: text("message_id"),
    messageName: text("message_name"),
    // The portal session that made the change, when a portal token rather than an API key did.
    portalSessionId: text("portal_session_id"),
    // Fields of one event type, as a JSON object (a liveness change's `from` and `to`).
    details: text("details"),
  },
  (t) => [primaryKey({ name: "events_org_time", columns: [t.orgId, t.storedAt, t.id] })],
);

/**
 * Each organization's newest event key. Every write that records an event moves it in its own transaction and
 * holds its row lock until commit, so keys grow in commit order (events.ts).
 */
export const eventKeys = pgTable("event_keys", {
  orgId: text("org_id").primaryKey().references(() => orgs.id, { onDelete: "cascade" }),
  storedAt: ms("stored_at").notNull(),
  seq: ms("seq").notNull(),
});

/** Failed authentications per client address, shared by every instance so that lockout holds across them. */
export const authFailures = pgTable(
  "auth_failures",
  {
    address: text("address").primaryKey(),
    since: ms("since").notNull(),
    count: integer("count").notNull(),
    lockedUntil: ms("locked_until"),
  },
  (t) => [index("auth_failures_locked").on(t.lockedUntil)],
);

/**
 * Replays waiting for the delivery worker (POST …/listeners/{l}/replay), as on SQLite: the listener's final
 * deliveries of the messages created in [since, until) start a new cycle, a chunk at a time; the messages lie
 * between from_seq and to_seq, and `done_seq` is how far the worker got.
 */
export const replays = pgTable("replays", {
  id: seq("id"),
  listenerSeq: ms("listener_seq").notNull().references(() => listeners.seq, { onDelete: "cascade" }),
  since: ms("since").notNull(),
  until: ms("until").notNull(),
  only: text("only", { enum: ["missed", "all"] }).notNull(),
  toSeq: ms("to_seq").notNull(),
  doneSeq: ms("done_seq").notNull(),
  createdAt: ms("created_at").notNull(),
});

/** Idempotency-Key records (docs/api.md), as on SQLite: written in the transaction of the request's change. */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    keyHash: text("key_hash").primaryKey(),
    orgId: text("org_id").notNull(),
    fingerprint: text("fingerprint").notNull(),
    status: integer("status"),
    response: bytea("response"),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [index("idempotency_keys_created").on(t.createdAt)],
);

/** One row a readiness check rewrites: the cheapest write that proves the database accepts writes. */
export const readiness = pgTable("readiness", {
  id: integer("id").primaryKey(),
  checkedAt: ms("checked_at").notNull(),
});

/**
 * Portal sessions (docs/portal.md), as on SQLite: the token kept only as its SHA-256, a revoked or expired row
 * kept until the sweep so the portal page can still show its return link.
 */
export const portalSessions = pgTable(
  "portal_sessions",
  {
    seq: seq("seq"),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    queueId: text("queue_id").notNull().references(() => queues.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull().unique(),
    // True: every listener of the queue, present and future; false: those in portal_session_listeners.
    allListeners: boolean("all_listeners").notNull(),
    canManage: boolean("can_manage").notNull(),
    // A JSON array of origins that may frame the page.
    allowedOrigins: text("allowed_origins").notNull(),
    brandName: text("brand_name"),
    brandLogo: text("brand_logo"),
    brandAccent: text("brand_accent"),
    returnUrl: text("return_url"),
    createdAt: ms("created_at").notNull(),
    expiresAt: ms("expires_at").notNull(),
    revokedAt: ms("revoked_at"),
  },
  (t) => [index("portal_sessions_org").on(t.orgId, t.seq), index("portal_sessions_expiry").on(t.expiresAt)],
);

/** The listeners a portal session reaches when it names them; one made through the session joins it. */
export const portalSessionListeners = pgTable(
  "portal_session_listeners",
  {
    sessionId: text("session_id").notNull().references(() => portalSessions.id, { onDelete: "cascade" }),
    listenerId: text("listener_id").notNull().references(() => listeners.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ name: "portal_session_listeners_pk", columns: [t.sessionId, t.listenerId] }), index("portal_session_listeners_listener").on(t.listenerId)],
);
