import { t } from "elysia";
import { Links } from "../shared-model.ts";
import { QueueMessageSchemaModel } from "../queues/model.ts";

export const SchemaParams = t.Object({ queue_id: t.String(), schema_id: t.String({ description: "the queue's `schema_id` (hex SHA-256)" }) });
export const SchemaResponse = t.Object({ schema: QueueMessageSchemaModel, _links: Links });
