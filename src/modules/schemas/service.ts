import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope } from "../../http/scopes.ts";
import { notFound } from "../../lib/errors.ts";
import type { QueueMessageSchema } from "./message-schema.ts";

/**
 * Only the queue's current schema exists as a resource: an older schema_id, or any id on a queue without a
 * schema, is 404. The queue is read from the store directly, so the schemas scope alone is enough.
 */
export async function getSchema(deps: Deps, auth: Auth, queueId: string, id: string): Promise<QueueMessageSchema> {
  requireScope(auth.key, "schemas", "read", [queueId, id]);
  const queue = await deps.store.queues.get(auth.orgId, queueId);
  if (queue.schema === null || queue.schemaId !== id) throw notFound("The schema");
  return queue.schema;
}
