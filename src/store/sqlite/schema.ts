/**
 * Drizzle schema of the SQLite backend. drizzle-kit generates drizzle/*.sql from this file
 * (`npm run db:generate`); the SQL is embedded into the binary by store/sqlite/migrations.ts.
 *
 * Tables that clients address carry a text `id` (opaque ResourceId) and, where insertion order matters,
 * an integer `seq`: a listener receives only messages published after it was created, decided by the
 * publish transaction, and lists are ordered by `seq` so paging is stable.
 */
import { sql } from "drizzle-orm";
import { sqliteTable, text, integer, blob, index, uniqueIndex, primaryKey } from "drizzle-orm/sqlite-core";

export const orgs = sqliteTable("orgs", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  // The queue its usage events are also published to (docs/api.md, "Operational messages"); cleared with it.
  eventsQueueId: text("events_queue_id"),
  createdAt: integer("created_at").notNull(),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    status: text("status", { enum: ["enabled", "disabled"] }).notNull(),
    scopes: text("scopes").notNull(),
    keyHash: text("key_hash").notNull().unique(),
    owner: integer("owner", { mode: "boolean" }).notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("api_keys_org").on(t.orgId, t.seq)],
);

export const queues = sqliteTable(
  "queues",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    schema: text("schema"),
    schemaId: text("schema_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("queues_org_name").on(t.orgId, t.name)],
);

export const listeners = sqliteTable(
  "listeners",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull(),
    queueId: text("queue_id").notNull().references(() => queues.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    notifyUrl: text("notify_url").notNull(),
    livenessUrl: text("liveness_url").notNull(),
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretUntil: integer("previous_secret_until"),
    livenessState: text("liveness_state", { enum: ["pending", "stable", "unstable", "down"] }).notNull(),
    successCount: integer("success_count").notNull().default(0),
    failureCount: integer("failure_count").notNull().default(0),
    failuresInRow: integer("failures_in_row").notNull().default(0),
    nextProbeAt: integer("next_probe_at").notNull(),
    downSince: integer("down_since"),
    // Counters are kept on the row, updated in the same transaction as the delivery transition that changes
    // them, so GET of a listener stays O(1) however many deliveries it has had.
    acknowledgedCount: integer("acknowledged_count").notNull().default(0),
    missedCount: integer("missed_count").notNull().default(0),
    missed: text("missed").notNull().default("[]"),
    // The last message seq given out when the listener was created (fanout.ts): it receives the messages after it.
    fromSeq: integer("from_seq").notNull().default(0),
    // Paused (false): its deliveries are held as while it is down; a 410 Gone from its receiver pauses it.
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    // What it receives and how it is called (docs/api.md, "Listeners"): the filter and headers as JSON text,
    // NULL for none. A filter applies to the messages published after it was saved; listener_filters keeps the
    // one before for messages not yet fanned out.
    filter: text("filter"),
    headers: text("headers"),
    // Its pace and order (docs/delivery.md, "Pace and order"): NULL takes the server's defaults.
    rateLimit: integer("rate_limit"),
    concurrency: integer("concurrency"),
    ordering: text("ordering", { enum: ["unordered", "fifo"] }).notNull().default("unordered"),
    // The start time the next claimed delivery of a rate-limited listener may take (store/sqlite/pace.ts).
    rateNextAt: integer("rate_next_at").notNull().default(0),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("listeners_queue_name").on(t.queueId, t.name),
    index("listeners_org").on(t.orgId, t.seq),
    index("listeners_probe").on(t.nextProbeAt),
    // The highest from_seq is a seq given out: the next message's must be above it (fanout.ts).
    index("listeners_from_seq").on(t.fromSeq),
    // The few listeners with a filter, which the fan-out judges one message at a time (fanout-filters.ts).
    index("listeners_filtered").on(t.queueId).where(sql`filter IS NOT NULL`),
    // The others, which the fan-out writes in one statement: a queue of filtered listeners costs it nothing.
    index("listeners_unfiltered").on(t.queueId, t.fromSeq).where(sql`filter IS NULL`),
    // The few FIFO listeners, whose lines the claim asks for their heads (claim-choice.ts).
    index("listeners_fifo").on(t.seq).where(sql`ordering = 'fifo'`),
  ],
);

export const messages = sqliteTable(
  "messages",
  {
    // Rowid tables without AUTOINCREMENT on the hot paths (messages, deliveries, attempts): AUTOINCREMENT
    // updates sqlite_sequence on every insert (docs/performance.md). A rowid is reused
    // only after the newest row is deleted; nothing depends on it never coming back (deliveries are fenced by
    // their lease token, which never repeats).
    seq: integer("seq").primaryKey(),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull(),
    queueId: text("queue_id").notNull().references(() => queues.id, { onDelete: "cascade" }),
    name: text("name"),
    data: text("data").notNull(),
    // A message for one listener of the queue only (a test message): its seq. The fan-out reads it (fanout.ts).
    onlyListener: integer("only_listener"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("messages_queue").on(t.queueId, t.seq), index("messages_org").on(t.orgId, t.seq)],
);

/**
 * One row: the seq of the last message whose deliveries exist (fanout.ts). A publish writes its message only; the
 * delivery worker writes the deliveries of the messages past this point, and moves it, in one transaction.
 */
export const fanout = sqliteTable("fanout", {
  id: integer("id").primaryKey(),
  messageSeq: integer("message_seq").notNull(),
});

export const deliveries = sqliteTable(
  "deliveries",
  {
    id: integer("id").primaryKey(),
    orgId: text("org_id").notNull(),
    messageSeq: integer("message_seq").notNull().references(() => messages.seq, { onDelete: "cascade" }),
    listenerSeq: integer("listener_seq").notNull().references(() => listeners.seq, { onDelete: "cascade" }),
    state: text("state", { enum: ["pending", "sending", "acknowledged", "missed"] }).notNull(),
    attempt: integer("attempt").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at"),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: integer("lease_expires_at"),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    // Set when the delivery first waited for its listener to come back up (state 'pending', next_attempt_at
    // NULL while it waits); cleared by the next attempt. Bounds the wait without using up retries.
    heldSince: integer("held_since"),
    // 1 for the delivery a publish made; a redelivery or replay starts the next cycle, with a fresh schedule.
    cycle: integer("cycle").notNull().default(1),
    // 1: its listener is FIFO, so it waits in the listener's line (docs/delivery.md, "Pace and order").
    line: integer("line").notNull().default(0),
    // The attempt that acknowledged the delivery in its cycle, kept on the row instead of as an attempts row: a
    // delivery that succeeds writes one row, not two (docs/performance.md). Its number, cycle and status are
    // attempt, cycle and last_status. A new cycle moves it to attempts first (store/sqlite/acked-attempts.ts).
    ackedAt: integer("acked_at"),
    ackedMs: integer("acked_ms"),
    ackedResponse: text("acked_response"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    // A FIFO listener's line by state: its head (the oldest pending) and whether one is in flight, each one step
    // down. Only FIFO rows, final ones included: a condition on the state would keep SQLite from using it for them.
    index("deliveries_line").on(t.listenerSeq, t.state, t.messageSeq).where(sql`line = 1`),
    // The foreign keys' own indexes: deleting a message or a listener finds its deliveries (cascade). A
    // listener's rows by message also give a replay its window of messages as one range.
    index("deliveries_message").on(t.messageSeq),
    index("deliveries_listener").on(t.listenerSeq, t.messageSeq),
    // Partial indexes, one per phase, so a row's index entries change only when it enters or leaves a phase:
    // an acknowledgement touches one small index instead of rewriting keys in every index on `state`.
    // Pending rows by due time (the claim; held rows have next_attempt_at NULL, outside `<= now`). Not a FIFO
    // line's: all but its head wait whatever their due time, and the claim asks each line for its head instead.
    index("deliveries_due").on(t.nextAttemptAt).where(sql`state = 'pending' AND line = 0`),
    // A listener's pending rows (the claim's fairness pass, resuming held rows after a successful probe).
    index("deliveries_listener_due").on(t.listenerSeq, t.nextAttemptAt).where(sql`state = 'pending'`),
    // Rows in flight by lease expiry (rescue).
    index("deliveries_lease").on(t.leaseExpiresAt).where(sql`state = 'sending'`),
    // Rows waiting for a down listener (missed once they have waited too long).
    index("deliveries_held").on(t.heldSince).where(sql`held_since IS NOT NULL`),
  ],
);

export const attempts = sqliteTable(
  "attempts",
  {
    id: integer("id").primaryKey(),
    deliveryId: integer("delivery_id").notNull().references(() => deliveries.id, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    // The delivery's cycle when this attempt was made (deliveries.cycle).
    cycle: integer("cycle").notNull().default(1),
    attemptedAt: integer("attempted_at").notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    response: text("response"),
  },
  (t) => [index("attempts_delivery").on(t.deliveryId)],
);

/**
 * A rowid table with one index: every write records an event, so each B-tree here is paid on every publish.
 * (org_id, stored_at, id) serves paging and the per-organization sweep; ids are unique by construction
 * (nextEventKey), so no index enforces it.
 */
export const events = sqliteTable(
  "events",
  {
    id: text("id").notNull(),
    orgId: text("org_id").notNull(),
    type: text("type").notNull(),
    storedAt: integer("stored_at").notNull(),
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
  (t) => [index("events_org_time").on(t.orgId, t.storedAt, t.id)],
);

/**
 * A listener's earlier filters, kept while messages published under them wait for their fan-out (fanout.ts):
 * a message whose seq is at most `upto_seq` is judged by the oldest such row, a later one by the listener's own
 * filter. The delivery worker drops the rows its cursor has passed.
 */
export const listenerFilters = sqliteTable(
  "listener_filters",
  {
    id: integer("id").primaryKey(),
    listenerSeq: integer("listener_seq").notNull().references(() => listeners.seq, { onDelete: "cascade" }),
    uptoSeq: integer("upto_seq").notNull(),
    filter: text("filter"),
  },
  (t) => [index("listener_filters_listener").on(t.listenerSeq, t.uptoSeq)],
);

/**
 * Replays waiting for the delivery worker (POST …/listeners/{l}/replay): the listener's final deliveries of the
 * messages created in [since, until) start a new cycle, a chunk at a time. Those messages lie between from_seq
 * and to_seq; `done_seq` is how far the worker got, so a replay of a million deliveries never holds the write
 * lock for long and survives a restart.
 */
export const replays = sqliteTable("replays", {
  id: integer("id").primaryKey(),
  listenerSeq: integer("listener_seq").notNull().references(() => listeners.seq, { onDelete: "cascade" }),
  since: integer("since").notNull(),
  until: integer("until").notNull(),
  only: text("only", { enum: ["missed", "all"] }).notNull(),
  toSeq: integer("to_seq").notNull(),
  doneSeq: integer("done_seq").notNull(),
  createdAt: integer("created_at").notNull(),
});

/**
 * Idempotency-Key records (docs/api.md), kept 24 hours. `key_hash` is SHA-256 of the organization and the key, so
 * the key itself is not stored; the response is encrypted with a key derived from it. The row is written in the
 * transaction of the request's change, and its response once the answer is rendered.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    keyHash: text("key_hash").primaryKey(),
    orgId: text("org_id").notNull(),
    fingerprint: text("fingerprint").notNull(),
    status: integer("status"),
    response: blob("response"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("idempotency_keys_created").on(t.createdAt)],
);

/** One row a readiness check rewrites: the cheapest write that proves the database accepts writes. */
export const readiness = sqliteTable("readiness", {
  id: integer("id").primaryKey(),
  checkedAt: integer("checked_at").notNull(),
});

/**
 * Portal sessions (docs/portal.md): a link an organization hands its customer, reaching some listeners of one
 * queue. The token is kept only as its SHA-256. A revoked or expired row stays until the sweep, so the portal
 * page can still show its return link.
 */
export const portalSessions = sqliteTable(
  "portal_sessions",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    queueId: text("queue_id").notNull().references(() => queues.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull().unique(),
    // True: every listener of the queue, present and future; false: those in portal_session_listeners.
    allListeners: integer("all_listeners", { mode: "boolean" }).notNull(),
    canManage: integer("can_manage", { mode: "boolean" }).notNull(),
    // A JSON array of origins that may frame the page.
    allowedOrigins: text("allowed_origins").notNull(),
    brandName: text("brand_name"),
    brandLogo: text("brand_logo"),
    brandAccent: text("brand_accent"),
    returnUrl: text("return_url"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [index("portal_sessions_org").on(t.orgId, t.seq), index("portal_sessions_expiry").on(t.expiresAt)],
);

/** The listeners a portal session reaches when it names them; one made through the session joins it. */
export const portalSessionListeners = sqliteTable(
  "portal_session_listeners",
  {
    sessionId: text("session_id").notNull().references(() => portalSessions.id, { onDelete: "cascade" }),
    listenerId: text("listener_id").notNull().references(() => listeners.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.listenerId] }), index("portal_session_listeners_listener").on(t.listenerId)],
);
