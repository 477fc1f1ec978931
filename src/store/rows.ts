/**
 * What both backends do alike once a row is read: stored rows to the store's types, and the choices made on them
 * before anything is written. Rows are typed by shape, since each dialect's Drizzle schema types its own.
 */
import { unprocessable } from "../lib/errors.ts";
import type { ApiKey, Listener, ListenerInput, ListenerLine, ListenerSecrets, Message, Queue, UsageEvent } from "./index.ts";

export const toKey = (r: Omit<ApiKey, "scopes"> & { scopes: string }): ApiKey => ({
  id: r.id,
  orgId: r.orgId,
  name: r.name,
  status: r.status,
  scopes: JSON.parse(r.scopes),
  owner: r.owner,
  createdAt: r.createdAt,
});

export const toQueue = (r: Omit<Queue, "schema"> & { schema: string | null }): Queue => ({
  id: r.id,
  orgId: r.orgId,
  name: r.name,
  schema: r.schema === null ? null : JSON.parse(r.schema),
  schemaId: r.schemaId,
  createdAt: r.createdAt,
});

export const toMessage = (r: Omit<Message, "data"> & { data: string }): Message => ({
  id: r.id,
  orgId: r.orgId,
  queueId: r.queueId,
  name: r.name,
  data: JSON.parse(r.data),
  createdAt: r.createdAt,
});

type EventRow = Pick<UsageEvent, "id" | "type" | "storedAt" | "orgId"> & {
  apiKeyId: string | null; apiKeyName: string | null; queueId: string | null; queueName: string | null;
  listenerId: string | null; listenerName: string | null; messageId: string | null; messageName: string | null;
  portalSessionId: string | null; details: string | null;
};
const ref = (id: string | null, name: string | null) => (id ? { id, name: name ?? "" } : null);
export const toEvent = (r: EventRow): UsageEvent => ({
  id: r.id,
  type: r.type,
  storedAt: r.storedAt,
  orgId: r.orgId,
  apiKey: ref(r.apiKeyId, r.apiKeyName),
  queue: ref(r.queueId, r.queueName),
  listener: ref(r.listenerId, r.listenerName),
  message: r.messageId ? { id: r.messageId, name: r.messageName } : null,
  portalSession: r.portalSessionId ? { id: r.portalSessionId } : null,
  details: r.details === null ? null : JSON.parse(r.details),
});

type ListenerRow = Pick<Listener, "id" | "orgId" | "queueId" | "name" | "notifyUrl" | "livenessUrl" | "enabled" | "createdAt"> & {
  livenessState: Listener["liveness"]["state"]; successCount: number; failureCount: number; acknowledgedCount: number; missedCount: number;
  filter: string | null; headers: string | null; rateLimit: number | null; concurrency: number | null; ordering: Listener["ordering"];
};
/** `missed`: the ids the row keeps (SQLite as JSON text, PostgreSQL as jsonb), already read. */
export const toListener = (r: ListenerRow, missed: string[]): Listener => ({
  id: r.id,
  orgId: r.orgId,
  queueId: r.queueId,
  name: r.name,
  notifyUrl: r.notifyUrl,
  livenessUrl: r.livenessUrl,
  liveness: { state: r.livenessState, successCount: r.successCount, failureCount: r.failureCount },
  messages: { acknowledgedCount: r.acknowledgedCount, missed, missedCount: r.missedCount },
  enabled: r.enabled,
  filter: r.filter === null ? null : JSON.parse(r.filter),
  headers: r.headers === null ? null : JSON.parse(r.headers),
  rateLimit: r.rateLimit,
  concurrency: r.concurrency,
  ordering: r.ordering,
  createdAt: r.createdAt,
});

/**
 * The head of a FIFO listener's line (deliveries_line): the delivery in flight, else the oldest pending one. `raw`
 * runs one statement with positional parameters and returns its rows, on either backend.
 */
export async function lineOf(raw: (sql: string, params: unknown[]) => unknown[] | Promise<unknown[]>, listenerSeq: number): Promise<ListenerLine> {
  const head = (state: string) => `SELECT m.id AS "messageId", d.state AS state, d.attempt AS attempts, d.next_attempt_at AS "nextAttemptAt"
    FROM deliveries d JOIN messages m ON m.seq = d.message_seq
    WHERE d.listener_seq = $1 AND d.line = 1 AND d.state IN ('pending', 'sending') AND d.state = '${state}' ORDER BY d.message_seq LIMIT 1`;
  type Head = NonNullable<ListenerLine["head"]>;
  const [sending] = (await raw(head("sending"), [listenerSeq])) as Head[];
  const [pending] = sending ? [] : ((await raw(head("pending"), [listenerSeq])) as Head[]);
  const [count] = (await raw(`SELECT count(*) AS n FROM deliveries
    WHERE listener_seq = $1 AND line = 1 AND state IN ('pending', 'sending') AND state = 'pending'`, [listenerSeq])) as { n: number | string }[];
  const row = sending ?? pending;
  const asHead = (r: Head): Head => ({ ...r, attempts: Number(r.attempts), nextAttemptAt: r.nextAttemptAt === null ? null : Number(r.nextAttemptAt) });
  return { head: row ? asHead(row) : null, waiting: Number(count?.n ?? 0) };
}

/** The previous secret is reported only while its grace period lasts. */
export const toSecrets = (r: { secret: string; previousSecret: string | null; previousSecretUntil: number | null }, now: number): ListenerSecrets =>
  r.previousSecret && r.previousSecretUntil && r.previousSecretUntil > now
    ? { current: r.secret, previous: r.previousSecret, previousUntil: r.previousSecretUntil }
    : { current: r.secret, previous: null, previousUntil: null };

export const unknownEventsQueue = () =>
  unprocessable("The events queue must be a queue of this organization.", [{ path: "/events_queue_id", message: "is not a queue of this organization" }]);

export const listenerNameTaken = (name: string) => `A listener named '${name}' already exists on this queue.`;

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/** A new listener's settings as both backends store them: JSON text, NULL for none. */
export const listenerSettings = (input: ListenerInput) => ({
  filter: jsonOrNull(input.filter), headers: jsonOrNull(input.headers), rateLimit: input.rateLimit ?? null,
  concurrency: input.concurrency ?? null, ordering: input.ordering ?? "unordered" as const,
});

type StoredSettings = { filter: string | null; headers: string | null; rateLimit: number | null; concurrency: number | null; ordering: Listener["ordering"] };

/** The settings an update changes, as stored; `filterChanged` when the filter is another than before. */
export function changedSettings(before: StoredSettings, patch: Partial<ListenerInput>): { set: Partial<StoredSettings>; filterChanged: boolean } {
  const set: Partial<StoredSettings> = {};
  if (patch.filter !== undefined) set.filter = jsonOrNull(patch.filter);
  if (patch.headers !== undefined) set.headers = jsonOrNull(patch.headers);
  if (patch.rateLimit !== undefined) set.rateLimit = patch.rateLimit;
  if (patch.concurrency !== undefined) set.concurrency = patch.concurrency;
  if (patch.ordering !== undefined) set.ordering = patch.ordering;
  return { set, filterChanged: set.filter !== undefined && set.filter !== before.filter };
}

/** The redelivery targets named, or all of them; 422 for a name that is not one of them (before anything is written). */
export function chooseTargets<T extends { listenerId: string }>(targets: T[], listenerIds: string[] | null): T[] {
  if (listenerIds === null) return targets;
  const known = new Set(targets.map((t) => t.listenerId));
  const unknown = listenerIds.map((l, i) => ({ l, i })).filter(({ l }) => !known.has(l));
  if (unknown.length) {
    throw unprocessable("The message was not fanned out to these listeners.", unknown.map(({ i }) => ({ path: `/listeners/${i}`, message: "is not one of the message's listeners" })));
  }
  const wanted = new Set(listenerIds);
  return targets.filter((t) => wanted.has(t.listenerId));
}
