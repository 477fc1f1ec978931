/**
 * The storage contract. Every backend (SQLite, PostgreSQL) implements it and passes test/store.
 *
 * Invariants every implementation keeps:
 * - Every function over an organization's rows takes `orgId` first; rows of another organization are invisible
 *   (they read as "not found"). The only unscoped reads are `apiKeys.authenticate` and
 *   `portalSessions.authenticate`/`find` (a request has no organization before its credential is known) and the
 *   delivery worker's claim, which works across organizations.
 * - Functions return Promises although bun:sqlite is synchronous, so PostgreSQL fits; each unit of work is one
 *   call, because a bun:sqlite transaction callback cannot await.
 * - Time is passed in (`now`, epoch ms); no SQL reads the clock.
 * - Every successful write also records its usage event in the same transaction (no change without its event,
 *   no event without its change). `actor` is the calling key.
 * - Errors are AppErrors from lib/errors: 404 for an unknown id, 409 for a duplicate name, and StorageUnavailable
 *   (503 with Retry-After) for any write when the database cannot be written (a full disk, a read-only file
 *   system, I/O errors, a PostgreSQL server that cannot be reached): a backend maps its own error codes to it, so
 *   services and the delivery worker never see them. No error carries a query's parameters (payloads, key hashes).
 */
import type { QueueMessageSchema } from "../modules/schemas/message-schema.ts";
import type { DeliveryStore } from "./deliveries.ts";
import type { FilterSpec } from "../lib/filter.ts";

export type Visible = "all" | readonly string[];
export type Page = { offset: number; limit: number };
export type Paged<T> = { items: T[]; total: number };
/**
 * The calling key, recorded with every write's usage event; `idempotency` when the request carries a key.
 * `portalSession`: the caller holds that portal session's token, not a key; its events name the session and no key.
 */
export type Actor = { keyId: string; keyName: string; idempotency?: IdempotencyClaim; portalSession?: string };

/**
 * A request's Idempotency-Key (http/idempotency.ts). The first write made for the request records it in that
 * write's own transaction (beside its usage event), so a change and its key commit together: a retry after a
 * crash finds the key and cannot make the change twice. `claimed` tells the caller a write recorded it.
 */
export type IdempotencyClaim = { keyHash: string; fingerprint: string; claimed: boolean };

export type ScopeResource =
  | "api_clients" | "api_keys" | "events" | "queues" | "listeners" | "messages" | "schemas" | "stats" | "subscriptions";
export type Scope = { resource: ScopeResource; access: "read" | "write"; targets: string[] };

export interface Org {
  id: string;
  name: string;
  /** The queue every usage event but message_added is also published to; null: none. */
  eventsQueueId: string | null;
  createdAt: number;
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  status: "enabled" | "disabled";
  scopes: Scope[];
  owner: boolean;
  createdAt: number;
}

export interface Queue {
  id: string;
  orgId: string;
  name: string;
  schema: QueueMessageSchema | null;
  schemaId: string | null;
  createdAt: number;
}

export type LivenessState = "pending" | "stable" | "unstable" | "down";

export interface Listener {
  id: string;
  orgId: string;
  queueId: string;
  name: string;
  notifyUrl: string;
  livenessUrl: string;
  liveness: { state: LivenessState; successCount: number; failureCount: number };
  messages: { acknowledgedCount: number; missed: string[]; missedCount: number };
  /** False: paused; its deliveries are held as while it is down (docs/delivery.md). */
  enabled: boolean;
  /** Which messages it receives (lib/filter.ts), as saved; null: every message. */
  filter: FilterSpec | null;
  /** Sent with every delivery and probe; null: none. */
  headers: Record<string, string> | null;
  /** Deliveries started per second at most; null: no limit beyond concurrency. */
  rateLimit: number | null;
  /** Requests in flight at most; null: the server's --listener-concurrency. */
  concurrency: number | null;
  ordering: Ordering;
  /** A FIFO listener's line, read by `get` only: the delivery at its head and how many wait behind it. */
  line?: ListenerLine;
  createdAt: number;
}

export type ListenerLine = {
  /** The one in flight, else the oldest not yet final; null when the line is empty. */
  head: { messageId: string; state: "pending" | "sending"; attempts: number; nextAttemptAt: number | null } | null;
  /** Deliveries waiting in the line, the head included when it is not in flight. */
  waiting: number;
};

export type Ordering = "unordered" | "fifo";

export interface Message {
  id: string;
  orgId: string;
  queueId: string;
  name: string | null;
  data: unknown;
  createdAt: number;
}

/** What a publish answers with: the caller has the data it sent, so it is not parsed back. */
export type PublishedMessage = Omit<Message, "data">;

export type DeliveryState = "pending" | "sending" | "acknowledged" | "missed";

/** Where one message's delivery to one listener stands. */
export interface DeliveryProgress {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  /** 1 for the publish's own delivery; each redelivery or replay starts the next. */
  cycle: number;
  updatedAt: number;
}

/** Per listener delivery state of one message (GET one message). */
export interface DeliveryStatus extends DeliveryProgress {
  listenerId: string;
  listenerName: string;
}

export interface Attempt {
  listenerId: string;
  listenerName: string;
  attempt: number;
  /** The delivery's cycle the attempt belongs to (DeliveryStatus.cycle). */
  cycle: number;
  attemptedAt: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The start of the receiver's response body (at most 1 KiB, as UTF-8); null without an answer or with an empty body. */
  response: string | null;
}

export interface UsageEvent {
  id: string;
  type: string;
  storedAt: number;
  orgId: string;
  apiKey: { id: string; name: string } | null;
  queue: { id: string; name: string } | null;
  listener: { id: string; name: string } | null;
  message: { id: string; name: string | null } | null;
  /** The portal session whose token made the change (instead of an API key). */
  portalSession: { id: string } | null;
  /** Fields of the event's own type: a liveness change's `from` and `to`, a 410's `status`. */
  details: Record<string, unknown> | null;
}

export interface OrgStore {
  /** With `owner`, the organization's owner key is made in the same transaction: no organization without its key. */
  create(name: string, now: number, owner?: NewApiKey): Promise<Org>;
  list(): Promise<Org[]>;
  get(orgId: string): Promise<Org>;
  /** 422 for an events queue that is not one of the organization's. */
  update(orgId: string, patch: OrgPatch, now: number, actor: Actor): Promise<Org>;
}

export type OrgPatch = { name?: string; eventsQueueId?: string | null };

export type NewApiKey = { name: string; status: "enabled" | "disabled"; scopes: Scope[]; hash: string; owner: boolean };
export type ApiKeyPatch = { name?: string; status?: "enabled" | "disabled"; scopes?: Scope[] };

export interface ApiKeyStore {
  create(orgId: string, key: NewApiKey, now: number, actor: Actor | null): Promise<ApiKey>;
  list(orgId: string, page: Page): Promise<Paged<ApiKey>>;
  get(orgId: string, id: string): Promise<ApiKey>;
  update(orgId: string, id: string, patch: ApiKeyPatch, now: number, actor: Actor): Promise<ApiKey>;
  delete(orgId: string, id: string, now: number, actor: Actor): Promise<void>;
  /** The enabled or disabled key with this SHA-256 hash, or null. Unscoped: it is how a request finds its organization. */
  authenticate(hash: string): Promise<ApiKey | null>;
}

export type QueueInput = { name: string; schema: QueueMessageSchema | null; schemaId: string | null };

export interface QueueStore {
  create(orgId: string, input: QueueInput, now: number, actor: Actor): Promise<Queue>;
  list(orgId: string, visible: Visible, page: Page): Promise<Paged<Queue>>;
  get(orgId: string, id: string): Promise<Queue>;
  update(orgId: string, id: string, input: QueueInput, now: number, actor: Actor): Promise<Queue>;
  /** Also removes its listeners, messages, deliveries and attempts. */
  delete(orgId: string, id: string, now: number, actor: Actor): Promise<void>;
  /** Names of the queue's listeners, for the queue's `_links`. */
  listenerNames(orgId: string, id: string): Promise<{ id: string; name: string }[]>;
}

/** In an update, an absent field stays as it is, and null removes a filter, the headers, a rate limit or a concurrency. */
export type ListenerInput = {
  name: string;
  notifyUrl: string;
  livenessUrl: string;
  /** Default true. */
  enabled?: boolean;
  filter?: FilterSpec | null;
  headers?: Record<string, string> | null;
  rateLimit?: number | null;
  concurrency?: number | null;
  ordering?: Ordering;
};
/** Messages created in [since, until), epoch ms; `only` which final deliveries start again. */
export type ReplayWindow = { since: number; until: number; only: "missed" | "all" };
export type ListenerFilter = { queueId?: string; visible: Visible };
export type ListenerSecrets = { current: string; previous: string | null; previousUntil: number | null };

/** One message's delivery to one listener, as the listener's own list of deliveries shows it. */
export interface ListenerDelivery extends DeliveryProgress {
  message: { id: string; name: string | null; createdAt: number };
}

export interface ListenerStore {
  create(orgId: string, queueId: string, input: ListenerInput & { secret: string }, now: number, actor: Actor): Promise<Listener>;
  list(orgId: string, filter: ListenerFilter, page: Page): Promise<Paged<Listener>>;
  get(orgId: string, queueId: string, id: string): Promise<Listener>;
  update(orgId: string, queueId: string, id: string, patch: Partial<ListenerInput>, now: number, actor: Actor): Promise<Listener>;
  /** Pending deliveries to it stop with it. */
  delete(orgId: string, queueId: string, id: string, now: number, actor: Actor): Promise<void>;
  secrets(orgId: string, queueId: string, id: string, now: number): Promise<ListenerSecrets>;
  /** The old secret keeps signing until `previousUntil`. With an `actor` it records `listener_updated`. */
  rotateSecret(orgId: string, queueId: string, id: string, secret: string, previousUntil: number, now: number, actor?: Actor): Promise<ListenerSecrets>;
  /**
   * Queues a replay for the delivery worker (DeliveryStore.replayChunk): the listener's final deliveries (missed,
   * or missed and acknowledged) of the messages created in the window start a new cycle. Returns how many there
   * are now. Records `listener_replayed`.
   */
  replay(orgId: string, queueId: string, id: string, window: ReplayWindow, now: number, actor: Actor): Promise<number>;
  /**
   * Its deliveries, newest message first. Created with an actor that holds a portal session, a listener joins
   * that session's listeners in the same transaction (docs/portal.md).
   */
  deliveries(orgId: string, queueId: string, id: string, page: Page): Promise<Paged<ListenerDelivery>>;
}

export type PortalBranding = { name: string | null; logoUrl: string | null; accent: string | null };

/** A link the organization hands its customer (docs/portal.md): what its token reaches, until when, and how it looks. */
export interface PortalSession {
  id: string;
  orgId: string;
  queueId: string;
  queueName: string;
  /** The listeners it reaches; null: every listener of the queue, those made later included. */
  listenerIds: string[] | null;
  canManage: boolean;
  /** Origins that may frame the portal page; empty: none. */
  allowedOrigins: string[];
  branding: PortalBranding;
  returnUrl: string | null;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

export type NewPortalSession = Pick<PortalSession, "queueId" | "listenerIds" | "canManage" | "allowedOrigins" | "branding" | "returnUrl" | "expiresAt"> & {
  /** SHA-256 of the token, hex; the token itself is never stored. */
  tokenHash: string;
};

export interface PortalSessionStore {
  /** 404 for an unknown queue, 422 for a listener id that is not one of its listeners. Records `portal_session_added`. */
  create(orgId: string, input: NewPortalSession, now: number, actor: Actor): Promise<PortalSession>;
  /** `visible`: every session, or those of these queues. */
  list(orgId: string, visible: Visible, page: Page): Promise<Paged<PortalSession>>;
  get(orgId: string, id: string): Promise<PortalSession>;
  /**
   * Revokes it at `now` and records `portal_session_deleted`; the row stays (its page still shows the return link)
   * until the sweep. One already revoked is left as it is, and nothing is recorded.
   */
  revoke(orgId: string, id: string, now: number, actor: Actor): Promise<PortalSession>;
  /** The session whose token has this SHA-256 hash, whatever its state, or null. Unscoped, as a key's lookup. */
  authenticate(hash: string): Promise<PortalSession | null>;
  /** The session with this id, or null. Unscoped: the portal page asks before it holds a token (docs/portal.md). */
  find(id: string): Promise<PortalSession | null>;
  /** Deletes the sessions that expired before `before`; returns how many. */
  sweep(before: number): Promise<number>;
}

/** `schemaId` absent: no schema check (the caller validated nothing, e.g. tests and benchmarks). */
/**
 * `value`: the data as parsed from the request, when the caller has it, so a filter need not parse `data` again;
 * without it the store parses the text.
 */
export type PublishInput = {
  name: string | null;
  data: string;
  schemaId?: string | null;
  value?: unknown;
  /** A message for this listener of the queue only, whatever its filter (a test message); 404 for another id. */
  listenerId?: string;
};
export type MessageFilter = { queueId?: string; visible: Visible };

export interface MessageStore {
  /**
   * Stores the message and, in the same transaction, one pending delivery per listener of the queue that exists now.
   * `schemaId` is the schema the data was checked against; if the queue's differs now, it throws SchemaChanged.
   */
  publish(orgId: string, queueId: string, input: PublishInput, now: number, actor: Actor): Promise<PublishedMessage>;
  list(orgId: string, filter: MessageFilter, page: Page): Promise<Paged<Message>>;
  get(orgId: string, queueId: string, id: string): Promise<Message>;
  deliveries(orgId: string, queueId: string, id: string): Promise<DeliveryStatus[]>;
  attempts(orgId: string, queueId: string, id: string): Promise<Attempt[]>;
  /**
   * The newest `limit` messages of the queue fanned out to one of these listeners (null: any of its listeners),
   * newest first: what a portal session's customer has received (docs/portal.md).
   */
  received(orgId: string, queueId: string, listenerIds: readonly string[] | null, limit: number): Promise<Message[]>;
  rename(orgId: string, queueId: string, id: string, name: string | null, now: number, actor: Actor): Promise<Message>;
  /** Pending deliveries of it stop with it. */
  delete(orgId: string, queueId: string, id: string, now: number, actor: Actor): Promise<void>;
  /**
   * Its deliveries to `listenerIds` (null: every listener it was fanned out to that still exists) start a new
   * cycle, due now, with a fresh retry schedule; earlier attempts stay. A delivery in flight is left to finish.
   * Returns how many start again; 422 for an id that is not one of the message's listeners. Records
   * `message_redelivered`.
   */
  redeliver(orgId: string, queueId: string, id: string, listenerIds: string[] | null, now: number, actor: Actor): Promise<number>;
}

export type IdempotencyRecord = {
  fingerprint: string;
  /** Null while the request's answer is not stored: it committed, then the process stopped before answering. */
  response: { status: number; body: Uint8Array } | null;
  createdAt: number;
};

export interface IdempotencyStore {
  /** The record of this key made at or after `since`, or null. */
  find(orgId: string, keyHash: string, since: number): Promise<IdempotencyRecord | null>;
  /** Stores the answer of the request that claimed the key (or records key and answer now, if no write did). */
  complete(orgId: string, claim: IdempotencyClaim, response: { status: number; body: Uint8Array }, now: number): Promise<void>;
  /** Deletes records made before `before`; returns how many. */
  sweep(before: number): Promise<number>;
}

export type EventQuery = { prefix: string | null; after: { storedAt: number; id: string } | null; limit: number; since: number };

export interface EventStore {
  /** Events stored at or after `since`, ascending by (storedAt, id), strictly after `after`; one extra tells whether more remain. */
  list(orgId: string, query: EventQuery): Promise<UsageEvent[]>;
  /** Deletes events stored before `before`; returns how many. */
  sweep(before: number): Promise<number>;
}

/**
 * What /metrics reads at each scrape: an operator's view across organizations, so unscoped like the worker's
 * claim. Every figure is read through an index (or from the small listeners table), never a scan of deliveries
 * beyond the rows it counts.
 */
export interface StoreGauges {
  /**
   * Per organization id: deliveries waiting to be sent (due, or a retry scheduled; not those in flight), and
   * deliveries held for their listener. Messages the worker has not fanned out yet (a millisecond or two after
   * their publish, normally) have no deliveries to count; `oldestDueAt` covers them.
   */
  deliveries: { orgId: string; pending: number; held: number }[];
  listeners: { orgId: string; state: LivenessState; count: number }[];
  /** When the delivery that has waited longest past its due time fell due (epoch ms); null when none waits. */
  oldestDueAt: number | null;
  /** The database on disk, its write-ahead log included. */
  databaseBytes: number;
}

export type LockoutRule = { attempts: number; windowMs: number; lockMs: number };

/**
 * Failed authentications counted where every instance sees them (PostgreSQL), so a lockout holds across
 * instances (docs/postgres.md). Without it (one SQLite server) the process counts them itself (http/lockout.ts).
 */
export interface LockoutStore {
  /** Counts one failed authentication of `address`; the end of its lock when this failure locked it, else 0. */
  fail(address: string, rule: LockoutRule, now: number): Promise<number>;
  /** The addresses locked at `now`, with the end of each lock. */
  locked(now: number): Promise<{ address: string; until: number }[]>;
  /**
   * From now on, `locked` hears of each lock another instance takes, and `resync` of each time such news may have
   * been missed (the subscription was re-established), including once at the start.
   */
  watch(handlers: { locked(address: string, until: number): void; resync(): void }): Promise<void>;
}

export interface Store {
  orgs: OrgStore;
  apiKeys: ApiKeyStore;
  queues: QueueStore;
  listeners: ListenerStore;
  messages: MessageStore;
  events: EventStore;
  deliveries: DeliveryStore;
  idempotency: IdempotencyStore;
  portalSessions: PortalSessionStore;
  lockouts?: LockoutStore;
  /** Throws the storage error when the database does not accept a write now (readiness: one tiny write). */
  checkWritable(now: number): Promise<void>;
  gauges(now: number): Promise<StoreGauges>;
  /** An online, consistent copy of the whole database into `file`. */
  backup(file: string): Promise<void>;
  /** Gives the space of deleted rows back to the file system (SQLite: a stopped server only). */
  compact(): Promise<void>;
  /**
   * Whether this process runs the API process's periodic work now (the usage-events cut-off, sweeps). Processes
   * sharing a PostgreSQL database take turns; absent (one SQLite server), always.
   */
  leads?(): Promise<boolean>;
  close(): Promise<void>;
}
