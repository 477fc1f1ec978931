import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { can, requireScope, visibleTo } from "../../http/scopes.ts";
import { unprocessable, type FieldError } from "../../lib/errors.ts";
import { newSecret } from "../../delivery/sign.ts";
import { resolveTarget, type TargetPolicy } from "../../delivery/egress.ts";
import type { Listener, ListenerInput, ListenerSecrets, Ordering, Page } from "../../store/index.ts";
import { canonicalFilter, compileFilter, type FilterSpec } from "../../lib/filter.ts";
import { checkHeaders, hideHeaderValues } from "./headers.ts";

export type ListenerCreate = {
  name: string;
  notify_url: string;
  liveness_url: string;
  enabled?: boolean;
  filter?: Record<string, unknown> | null;
  headers?: Record<string, string> | null;
  rate_limit?: number | null;
  concurrency?: number | null;
  ordering?: Ordering;
};
export type ListenerUpdate = Partial<ListenerCreate>;
export type ReplayRequest = { since: number; until?: number; only?: "missed" | "all" };

/** The old secret keeps signing beside the new one this long after a rotation (docs/delivery.md). */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/** These names are `_links` keys of their own in a queue response, so a listener called so would shadow them. */
const RESERVED_NAMES = new Set(["self", "schema"]);

/**
 * Both URLs are resolved now (422 when refused) so a typo or an internal address is caught when saved; the
 * delivery worker checks again at every connection, since DNS may change after this.
 */
async function checkTargets(policy: TargetPolicy, body: ListenerUpdate, before?: Listener): Promise<Partial<ListenerInput>> {
  const errors: FieldError[] = [];
  if (body.name !== undefined && RESERVED_NAMES.has(body.name)) {
    errors.push({ path: "/name", message: `'${body.name}' is reserved` });
  }
  const input = settingsOf(body, before, errors);
  const urls = (["notify_url", "liveness_url"] as const).filter((field) => body[field] !== undefined);
  const targets = await Promise.all(urls.map((field) => resolveTarget(body[field]!, policy)));
  targets.forEach((target, i) => {
    if (!target.ok) errors.push({ path: `/${urls[i]}`, message: target.reason });
  });
  if (errors.length) throw unprocessable("The listener cannot be saved.", errors);
  return input;
}

/**
 * The body as the store takes it, its filter in canonical form, after the rules a schema cannot say: the filter
 * and the headers (lib/filter.ts, headers.ts) and a FIFO listener's one request at a time, judged on the
 * listener as the update leaves it.
 */
function settingsOf(body: ListenerUpdate, before: Listener | undefined, errors: FieldError[]): Partial<ListenerInput> {
  const input: Partial<ListenerInput> = {};
  if (body.name !== undefined) input.name = body.name;
  if (body.notify_url !== undefined) input.notifyUrl = body.notify_url;
  if (body.liveness_url !== undefined) input.livenessUrl = body.liveness_url;
  if (body.enabled !== undefined) input.enabled = body.enabled;
  if (body.filter !== undefined) input.filter = body.filter === null ? null : checkedFilter(body.filter, errors);
  if (body.headers !== undefined) {
    errors.push(...(body.headers === null ? [] : checkHeaders(body.headers, "/headers")));
    input.headers = body.headers;
  }
  if (body.rate_limit !== undefined) input.rateLimit = body.rate_limit;
  if (body.concurrency !== undefined) input.concurrency = body.concurrency;
  if (body.ordering !== undefined) input.ordering = body.ordering;
  const ordering = body.ordering ?? before?.ordering ?? "unordered";
  const concurrency = body.concurrency !== undefined ? body.concurrency : (before?.concurrency ?? null);
  if (ordering === "fifo" && concurrency !== null && concurrency !== 1) {
    errors.push({ path: body.concurrency !== undefined ? "/concurrency" : "/ordering", message: "a fifo listener sends one request at a time: concurrency must be 1 or null" });
  }
  return input;
}

function checkedFilter(value: Record<string, unknown>, errors: FieldError[]): FilterSpec | null {
  const compiled = compileFilter(value, "/filter");
  if (!compiled.ok) {
    errors.push(...compiled.errors);
    return null;
  }
  return canonicalFilter(compiled.filter);
}

/** Header values may be credentials: a key that may not write the listener sees them hidden. */
export function presented(auth: Auth, listener: Listener): Listener {
  if (listener.headers === null || can(auth.key, "listeners", "write", [listener.queueId, listener.id])) return listener;
  return { ...listener, headers: hideHeaderValues(listener.headers) };
}

export async function createListener(deps: Deps, policy: TargetPolicy, auth: Auth, queueId: string, body: ListenerCreate, now: number) {
  requireScope(auth.key, "listeners", "write", [queueId]);
  // An unknown queue answers 404 before a slow or failing DNS lookup could answer 422.
  await deps.store.queues.get(auth.orgId, queueId);
  const settings = await checkTargets(policy, body);
  const secret = newSecret();
  const input = { ...settings, name: body.name, notifyUrl: body.notify_url, livenessUrl: body.liveness_url, enabled: body.enabled ?? true, secret };
  const listener = await deps.store.listeners.create(auth.orgId, queueId, input, now, auth.actor);
  return { listener, secret };
}

/**
 * A queue's listeners are one resource: the key must cover the queue, else 403. The list shows what the key may
 * read: for a key that covers the queue, all of them; for a portal token, its session's.
 */
export async function listListeners(deps: Deps, auth: Auth, queueId: string | undefined, page: Page) {
  if (queueId !== undefined) requireScope(auth.key, "listeners", "read", [queueId]);
  const list = await deps.store.listeners.list(auth.orgId, { queueId, visible: visibleTo(auth.key, "listeners") }, page);
  return { ...list, items: list.items.map((l) => presented(auth, l)) };
}

/** The listener's deliveries, newest message first: what its receiver was sent, and how each went. */
export async function listenerDeliveries(deps: Deps, auth: Auth, queueId: string, id: string, page: Page) {
  requireScope(auth.key, "listeners", "read", [queueId, id]);
  return deps.store.listeners.deliveries(auth.orgId, queueId, id, page);
}

export async function getListener(deps: Deps, auth: Auth, queueId: string, id: string): Promise<Listener> {
  requireScope(auth.key, "listeners", "read", [queueId, id]);
  return presented(auth, await deps.store.listeners.get(auth.orgId, queueId, id));
}

export async function updateListener(deps: Deps, policy: TargetPolicy, auth: Auth, queueId: string, id: string, body: ListenerUpdate, now: number) {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  // Unknown ids answer 404 before a slow or failing DNS lookup could answer 422.
  const before = await deps.store.listeners.get(auth.orgId, queueId, id);
  const input = await checkTargets(policy, body, before);
  return deps.store.listeners.update(auth.orgId, queueId, id, input, now, auth.actor);
}

/** The window is [since, until), until defaulting to now; an empty or inverted one is refused (422). */
export async function replay(deps: Deps, auth: Auth, queueId: string, id: string, body: ReplayRequest, now: number): Promise<number> {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  const until = body.until ?? now;
  if (body.since >= until) throw unprocessable("The window is empty: since must be before until (default: now).", [{ path: "/since", message: "must be before until" }]);
  // The delivery worker looks for waiting replays four times a second (delivery/upkeep.ts).
  return deps.store.listeners.replay(auth.orgId, queueId, id, { since: body.since, until, only: body.only ?? "missed" }, now, auth.actor);
}

export async function deleteListener(deps: Deps, auth: Auth, queueId: string, id: string, now: number) {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  await deps.store.listeners.delete(auth.orgId, queueId, id, now, auth.actor);
}

/** A signing secret lets its holder forge deliveries: reading it takes write scope, not read. */
export async function listenerSecrets(deps: Deps, auth: Auth, queueId: string, id: string, now: number): Promise<ListenerSecrets> {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  return deps.store.listeners.secrets(auth.orgId, queueId, id, now);
}

export async function rotateListenerSecret(deps: Deps, auth: Auth, queueId: string, id: string, now: number): Promise<ListenerSecrets> {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  return deps.store.listeners.rotateSecret(auth.orgId, queueId, id, newSecret(), now + ROTATION_GRACE_MS, now, auth.actor);
}

/**
 * A signed test message named `fanout.test` to this listener only, whatever its filter: it is stored in the queue
 * and its attempts are logged like any delivery's, so a receiver can be checked end to end.
 */
export async function sendTestMessage(deps: Deps, auth: Auth, queueId: string, id: string, now: number) {
  requireScope(auth.key, "listeners", "write", [queueId, id]);
  const listener = await deps.store.listeners.get(auth.orgId, queueId, id);
  const data = JSON.stringify({ test: true, listener: { id: listener.id, name: listener.name }, sent_at: now });
  const message = await deps.store.messages.publish(auth.orgId, queueId, { name: TEST_MESSAGE, data, listenerId: id }, now, auth.actor);
  try {
    deps.nudge();
  } catch (e) {
    deps.log.warn("could not nudge the delivery worker", { error: String(e) }); // its polling finds the message
  }
  return message;
}

export const TEST_MESSAGE = "fanout.test";
