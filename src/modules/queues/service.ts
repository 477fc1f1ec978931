import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope, visibleTo } from "../../http/scopes.ts";
import { unprocessable } from "../../lib/errors.ts";
import { randomBase62 } from "../../lib/ids.ts";
import type { Page, Queue, QueueInput } from "../../store/index.ts";
import { checkSchema, schemaId, type QueueMessageSchema } from "../schemas/message-schema.ts";

export type QueueBody = { name?: string; schema?: Record<string, unknown> | null };

/** A schema is checked when set (422 with every problem) and identified by the hash of its canonical JSON. */
function schemaOf(body: QueueBody): Pick<QueueInput, "schema" | "schemaId"> {
  if (body.schema === undefined || body.schema === null) return { schema: null, schemaId: null };
  const errors = checkSchema(body.schema);
  if (errors.length) throw unprocessable("The queue message schema is invalid.", errors.map((e) => ({ ...e, path: `/schema${e.path}` })));
  const schema = body.schema as QueueMessageSchema;
  return { schema, schemaId: schemaId(schema) };
}

export async function createQueue(deps: Deps, auth: Auth, body: QueueBody, now: number): Promise<Queue> {
  requireScope(auth.key, "queues", "write");
  const input = { name: body.name ?? `queue-${randomBase62(8)}`, ...schemaOf(body) };
  return deps.store.queues.create(auth.orgId, input, now, auth.actor);
}

export async function listQueues(deps: Deps, auth: Auth, page: Page) {
  return deps.store.queues.list(auth.orgId, visibleTo(auth.key, "queues"), page);
}

export async function getQueue(deps: Deps, auth: Auth, id: string) {
  requireScope(auth.key, "queues", "read", [id]);
  const queue = await deps.store.queues.get(auth.orgId, id);
  return { queue, listeners: await deps.store.queues.listenerNames(auth.orgId, id) };
}

/** PUT replaces the mutable properties: the name when given; the schema as given, removed when absent. */
export async function updateQueue(deps: Deps, auth: Auth, id: string, body: QueueBody, now: number) {
  requireScope(auth.key, "queues", "write", [id]);
  const current = await deps.store.queues.get(auth.orgId, id);
  const queue = await deps.store.queues.update(auth.orgId, id, { name: body.name ?? current.name, ...schemaOf(body) }, now, auth.actor);
  return { queue, listeners: await deps.store.queues.listenerNames(auth.orgId, id) };
}

export async function deleteQueue(deps: Deps, auth: Auth, id: string, now: number) {
  requireScope(auth.key, "queues", "write", [id]);
  await deps.store.queues.delete(auth.orgId, id, now, auth.actor);
}
