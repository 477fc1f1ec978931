/**
 * What both backends decide alike, around statements that stay each backend's own (docs/design.md, "Two
 * backends"): the row a create writes, the columns an update sets, the 409 texts, and stored rows back to the
 * store's types. A new column is added here and in both schemas. Rows are typed by shape, since each dialect's
 * Drizzle schema types its own.
 */
import { newId } from "../lib/ids.ts";
import { unprocessable } from "../lib/errors.ts";
import type {
  ApiKey, ApiKeyPatch, DeliveryProgress, Listener, ListenerDelivery, ListenerInput, ListenerLine, ListenerSecrets, Message, NewApiKey,
  NewPortalSession, Org, OrgPatch, PortalSession, Queue, QueueInput, UsageEvent,
} from "./index.ts";

export const newOrg = (name: string, now: number): Org => ({ id: newId("org", now), name, eventsQueueId: null, createdAt: now });

export const toOrg = (r: Org): Org => ({ id: r.id, name: r.name, eventsQueueId: r.eventsQueueId, createdAt: r.createdAt });

/** The columns an organization's update sets; null when the patch names none. */
export function orgChanges(patch: OrgPatch): { name?: string; eventsQueueId?: string | null } | null {
  const set = { ...(patch.name !== undefined && { name: patch.name }), ...(patch.eventsQueueId !== undefined && { eventsQueueId: patch.eventsQueueId }) };
  return Object.keys(set).length ? set : null;
}

export const unknownEventsQueue = () =>
  unprocessable("The events queue must be a queue of this organization.", [{ path: "/events_queue_id", message: "is not a queue of this organization" }]);

export const orgNameTaken = (name: string) => `An organization named '${name}' already exists.`;

/** Scopes are stored as JSON text on both backends, exactly as given. */
export const newKey = (orgId: string, key: NewApiKey, now: number) => ({
  id: newId("key", now), orgId, name: key.name, status: key.status, scopes: JSON.stringify(key.scopes), keyHash: key.hash,
  owner: key.owner, createdAt: now,
});

export type KeyChanges = { name?: string; status?: ApiKey["status"]; scopes?: string };

/** The columns an update sets; null when the patch names none. */
export function keyChanges(patch: ApiKeyPatch): KeyChanges | null {
  const set: KeyChanges = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.scopes !== undefined) set.scopes = JSON.stringify(patch.scopes);
  return Object.keys(set).length ? set : null;
}

export const toKey = (r: Omit<ApiKey, "scopes"> & { scopes: string }): ApiKey => ({
  id: r.id,
  orgId: r.orgId,
  name: r.name,
  status: r.status,
  scopes: JSON.parse(r.scopes),
  owner: r.owner,
  createdAt: r.createdAt,
});

/** The schema is stored as JSON text (null: none); an update replaces name, schema and schema id together. */
export const queueChanges = (input: QueueInput) => ({
  name: input.name, schema: input.schema && JSON.stringify(input.schema), schemaId: input.schemaId,
});

export const newQueue = (orgId: string, input: QueueInput, now: number) => ({ id: newId("queue", now), orgId, ...queueChanges(input), createdAt: now });

export const queueNameTaken = (name: string) => `A queue named '${name}' already exists.`;

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

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

/** Its liveness starts pending, its first probe due now; a filter and headers are stored as JSON text, NULL for none. */
export const newListener = (orgId: string, queueId: string, input: ListenerInput & { secret: string }, now: number) => ({
  id: newId("listener", now), orgId, queueId, name: input.name, notifyUrl: input.notifyUrl, livenessUrl: input.livenessUrl,
  secret: input.secret, livenessState: "pending" as const, nextProbeAt: now, createdAt: now, enabled: input.enabled ?? true,
  filter: jsonOrNull(input.filter), headers: jsonOrNull(input.headers), rateLimit: input.rateLimit ?? null,
  concurrency: input.concurrency ?? null, ordering: input.ordering ?? ("unordered" as const),
});

type NewListener = ReturnType<typeof newListener>;
export type ListenerChanges = Partial<Pick<NewListener,
  "name" | "notifyUrl" | "livenessUrl" | "enabled" | "nextProbeAt" | "filter" | "headers" | "rateLimit" | "concurrency" | "ordering">>;

/** The columns an update sets; null when the patch names none. */
export function listenerChanges(before: { enabled: boolean }, patch: Partial<ListenerInput>, now: number): ListenerChanges | null {
  const set: ListenerChanges = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.notifyUrl !== undefined) set.notifyUrl = patch.notifyUrl;
  if (patch.livenessUrl !== undefined) set.livenessUrl = patch.livenessUrl;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  // Resumed: probe it now; the probe's success makes its held deliveries due (delivery/liveness.ts).
  if (patch.enabled === true && !before.enabled) set.nextProbeAt = now;
  if (patch.filter !== undefined) set.filter = jsonOrNull(patch.filter);
  if (patch.headers !== undefined) set.headers = jsonOrNull(patch.headers);
  if (patch.rateLimit !== undefined) set.rateLimit = patch.rateLimit;
  if (patch.concurrency !== undefined) set.concurrency = patch.concurrency;
  if (patch.ordering !== undefined) set.ordering = patch.ordering;
  return Object.keys(set).length ? set : null;
}

/** Whether an update gives the listener another filter than it had (each backend keeps or marks the old one). */
export const filterChanged = (before: { filter: string | null }, set: ListenerChanges | null) =>
  set?.filter !== undefined && set.filter !== before.filter;

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
 * runs one statement with positional parameters and returns its rows, on either backend; `indexed` names the
 * index where the backend would otherwise walk the listener's whole history (SQLite: `INDEXED BY …`).
 */
export async function lineOf(raw: (sql: string, params: unknown[]) => unknown[] | Promise<unknown[]>, listenerSeq: number, indexed = ""): Promise<ListenerLine> {
  // The lowest message seq of the line in `state`, one step down the index (a min, where an ORDER BY sorted them all).
  const head = (state: string) => `SELECT m.id AS "messageId", d.state AS state, d.attempt AS attempts, d.next_attempt_at AS "nextAttemptAt"
    FROM deliveries d JOIN messages m ON m.seq = d.message_seq
    WHERE d.listener_seq = $1 AND d.message_seq = (SELECT min(h.message_seq) FROM deliveries h ${indexed}
      WHERE h.listener_seq = $1 AND h.line = 1 AND h.state = '${state}')`;
  type Head = NonNullable<ListenerLine["head"]>;
  const [sending] = (await raw(head("sending"), [listenerSeq])) as Head[];
  const [pending] = sending ? [] : ((await raw(head("pending"), [listenerSeq])) as Head[]);
  const [count] = (await raw(`SELECT count(*) AS n FROM deliveries
    WHERE listener_seq = $1 AND line = 1 AND state = 'pending'`, [listenerSeq])) as { n: number | string }[];
  const row = sending ?? pending;
  const asHead = (r: Head): Head => ({ ...r, attempts: Number(r.attempts), nextAttemptAt: r.nextAttemptAt === null ? null : Number(r.nextAttemptAt) });
  return { head: row ? asHead(row) : null, waiting: Number(count?.n ?? 0) };
}

/** The previous secret is reported only while its grace period lasts. */
export const toSecrets = (r: { secret: string; previousSecret: string | null; previousSecretUntil: number | null }, now: number): ListenerSecrets =>
  r.previousSecret && r.previousSecretUntil && r.previousSecretUntil > now
    ? { current: r.secret, previous: r.previousSecret, previousUntil: r.previousSecretUntil }
    : { current: r.secret, previous: null, previousUntil: null };

export const listenerNameTaken = (name: string) => `A listener named '${name}' already exists on this queue.`;

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

type PortalSessionRow = Pick<PortalSession, "id" | "orgId" | "queueId" | "canManage" | "returnUrl" | "createdAt" | "expiresAt" | "revokedAt"> & {
  allListeners: boolean; allowedOrigins: string; brandName: string | null; brandLogo: string | null; brandAccent: string | null;
};
/** `listenerIds`: the rows of portal_session_listeners, read apart; a session of all listeners ignores them. */
export const toPortalSession = (r: PortalSessionRow, queueName: string, listenerIds: string[]): PortalSession => ({
  id: r.id,
  orgId: r.orgId,
  queueId: r.queueId,
  queueName,
  listenerIds: r.allListeners ? null : listenerIds,
  canManage: r.canManage,
  allowedOrigins: JSON.parse(r.allowedOrigins),
  branding: { name: r.brandName, logoUrl: r.brandLogo, accent: r.brandAccent },
  returnUrl: r.returnUrl,
  createdAt: r.createdAt,
  expiresAt: r.expiresAt,
  revokedAt: r.revokedAt,
});

/** A new portal session's row, as both backends store it. */
export const newPortalSession = (orgId: string, input: NewPortalSession, now: number) => ({
  id: newId("portal_session", now), orgId, queueId: input.queueId, tokenHash: input.tokenHash, allListeners: input.listenerIds === null, canManage: input.canManage,
  allowedOrigins: JSON.stringify(input.allowedOrigins), brandName: input.branding.name, brandLogo: input.branding.logoUrl,
  brandAccent: input.branding.accent, returnUrl: input.returnUrl, createdAt: now, expiresAt: input.expiresAt, revokedAt: null,
});

/** 422 for the ids of `wanted` that are not among `found` (the queue's listeners), before anything is written. */
export function checkQueueListeners(wanted: string[], found: string[]): void {
  const known = new Set(found);
  const errors = wanted.map((id, i) => ({ id, i })).filter(({ id }) => !known.has(id))
    .map(({ i }) => ({ path: `/listener_ids/${i}`, message: "is not a listener of the queue" }));
  if (errors.length) throw unprocessable("A portal session reaches only listeners of its queue.", errors);
}

/** Groups (session, listener) pairs by session. */
export function listenersBySession(pairs: { sessionId: string; listenerId: string }[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const p of pairs) by.set(p.sessionId, [...(by.get(p.sessionId) ?? []), p.listenerId]);
  return by;
}

type ListenerDeliveryRow = DeliveryProgress & { messageId: string; messageName: string | null; messageCreatedAt: number };
export const toListenerDelivery = (r: ListenerDeliveryRow): ListenerDelivery => ({
  message: { id: r.messageId, name: r.messageName, createdAt: r.messageCreatedAt },
  state: r.state,
  attempts: r.attempts,
  nextAttemptAt: r.nextAttemptAt,
  lastStatus: r.lastStatus,
  lastError: r.lastError,
  cycle: r.cycle,
  updatedAt: r.updatedAt,
});
