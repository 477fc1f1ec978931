import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { messageReach, requireScope, visibleTo } from "../../http/scopes.ts";
import { AppError, SchemaChanged, forbidden, notFound, tooLarge, unprocessable } from "../../lib/errors.ts";
import type { Message, Page, PublishedMessage, Queue } from "../../store/index.ts";
import { validateData } from "../schemas/message-schema.ts";
import type { QueueCache } from "./queue-cache.ts";

export type MessageCreate = { name?: string; data: unknown };
export type MessageUpdate = { name?: string | null };

/** Size first (cheap, and bounds what the checker walks), then the queue's schema with every failing path. */
function checkData(deps: Deps, queue: Queue, data: unknown, text: string): void {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > deps.config.maxMessageBytes) {
    throw tooLarge(`The data is ${bytes} bytes serialized; the limit is ${deps.config.maxMessageBytes}.`);
  }
  if (queue.schema === null || queue.schemaId === null) return;
  const result = validateData(queue.schema, queue.schemaId, data);
  if (!result.ok) {
    throw unprocessable("The data does not match the queue's schema.", result.errors.map((e) => ({ path: `/data${e.path}`, message: e.message })));
  }
}

/**
 * Validation uses the remembered queue (QueueCache); the store refuses the write if the schema changed meanwhile,
 * and the message is checked again against the queue as it is now. Three tries bound a queue whose schema changes
 * constantly.
 */
async function publishChecked(deps: Deps, queues: QueueCache, auth: Auth, queueId: string, body: MessageCreate, text: string, now: number): Promise<PublishedMessage> {
  for (let attempt = 1; ; attempt++) {
    const { queue, cached } = await queues.get(auth.orgId, queueId);
    try {
      checkData(deps, queue, body.data, text);
      return await deps.store.messages.publish(auth.orgId, queueId, { name: body.name ?? null, data: text, schemaId: queue.schemaId, value: body.data }, now, auth.actor);
    } catch (e) {
      queues.forget(auth.orgId, queueId);
      // A refusal judged on a remembered schema is judged again on the queue as it is now.
      const stale = e instanceof SchemaChanged || (cached && e instanceof AppError && e.status === 422);
      if (!stale || attempt === 3) throw e;
    }
  }
}

/**
 * The messages scope on the queue is all a publisher needs: the queue is read from the store for its schema
 * without asking for the queues scope, so a key may publish to a queue it cannot otherwise see.
 * The stored text is the data exactly as sent, a JSON-in-a-string included, so listeners get what was published.
 */
export async function publishMessage(deps: Deps, queues: QueueCache, auth: Auth, queueId: string, body: MessageCreate, now: number): Promise<PublishedMessage> {
  requireScope(auth.key, "messages", "write", [queueId]);
  const text = JSON.stringify(body.data);
  const message = await publishChecked(deps, queues, auth, queueId, body, text, now);
  deps.metrics?.published(auth.orgId);
  nudge(deps);
  return message;
}

/**
 * Wakes the delivery worker for new due deliveries. A failure is logged, not thrown: the change is committed and
 * the worker's polling will find it; failing the request now would make the client send it twice.
 */
function nudge(deps: Deps): void {
  try {
    deps.nudge();
  } catch (e) {
    deps.log.warn("could not nudge the delivery worker", { error: String(e) });
  }
}

/**
 * A queue's messages are one resource: the key must cover the queue, else 403. Only the list across queues
 * (`queueId` absent) is filtered to what the key may read.
 */
export async function listMessages(deps: Deps, auth: Auth, queueId: string | undefined, page: Page) {
  if (queueId === undefined) return deps.store.messages.list(auth.orgId, { visible: visibleTo(auth.key, "messages") }, page);
  requireScope(auth.key, "messages", "read", [queueId]);
  return deps.store.messages.list(auth.orgId, { queueId, visible: "all" }, page);
}

/**
 * What of a message a portal token sees (docs/portal.md): its deliveries and attempts to the session's listeners;
 * a message that went to none of them is unknown to it (404).
 */
function reached<T extends { listenerId: string }>(reach: ((listenerId: string) => boolean) | null, items: T[]): T[] {
  if (!reach) return items;
  const mine = items.filter((d) => reach(d.listenerId));
  if (mine.length === 0) throw notFound("The message");
  return mine;
}

export async function getMessage(deps: Deps, auth: Auth, queueId: string, id: string) {
  const reach = messageReach(auth.key, "read", queueId, id);
  const [message, deliveries] = await Promise.all([
    deps.store.messages.get(auth.orgId, queueId, id),
    deps.store.messages.deliveries(auth.orgId, queueId, id),
  ]);
  return { message, deliveries: reached(reach, deliveries) };
}

export async function messageAttempts(deps: Deps, auth: Auth, queueId: string, id: string) {
  const reach = messageReach(auth.key, "read", queueId, id);
  if (reach) reached(reach, await deps.store.messages.deliveries(auth.orgId, queueId, id));
  const attempts = await deps.store.messages.attempts(auth.orgId, queueId, id);
  return reach ? attempts.filter((a) => reach(a.listenerId)) : attempts;
}

/** Only the name is mutable: given, it replaces; null removes it; absent (or no body) keeps it. */
export async function renameMessage(deps: Deps, auth: Auth, queueId: string, id: string, body: MessageUpdate, now: number): Promise<Message> {
  requireScope(auth.key, "messages", "write", [queueId, id]);
  const name = body.name !== undefined ? body.name : (await deps.store.messages.get(auth.orgId, queueId, id)).name;
  return deps.store.messages.rename(auth.orgId, queueId, id, name, now, auth.actor);
}

/** The listeners named (all of the message's when none are): 422 for an empty list. */
export async function redeliver(deps: Deps, auth: Auth, queueId: string, id: string, body: { listeners?: string[] }, now: number): Promise<number> {
  const reach = messageReach(auth.key, "write", queueId, id);
  if (body.listeners?.length === 0) throw unprocessable("Name at least one listener, or send no list to redeliver to all.", [{ path: "/listeners", message: "must not be empty" }]);
  let listeners = body.listeners ?? null;
  if (reach) {
    // A portal token redelivers to its session's listeners only: all of those the message went to by default.
    const mine = reached(reach, await deps.store.messages.deliveries(auth.orgId, queueId, id)).map((d) => d.listenerId);
    if (listeners?.some((l) => !reach(l))) throw forbidden("This portal session reaches only its own listeners.");
    listeners ??= mine;
  }
  const n = await deps.store.messages.redeliver(auth.orgId, queueId, id, listeners, now, auth.actor);
  if (n > 0) nudge(deps);
  return n;
}

export async function deleteMessage(deps: Deps, auth: Auth, queueId: string, id: string, now: number) {
  requireScope(auth.key, "messages", "write", [queueId, id]);
  await deps.store.messages.delete(auth.orgId, queueId, id, now, auth.actor);
}
