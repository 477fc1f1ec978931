import { t } from "elysia";
import { Links, ResourceName } from "../shared-model.ts";

/** The schema's own rules are checked by modules/schemas (422); here only "an object". */
export const QueueMessageSchemaModel = t.Record(t.String(), t.Any(), { description: "QueueMessageSchema: property name to directive" });

export const QueueBody = t.Object(
  {
    name: t.Optional(ResourceName),
    schema: t.Optional(t.Union([QueueMessageSchemaModel, t.Null()])),
  },
  { additionalProperties: false },
);

export const QueueParams = t.Object({ queue_id: t.String() });

const QueueItem = t.Object({ id: t.String(), name: t.String(), schema: t.Union([QueueMessageSchemaModel, t.Null()]), schema_id: t.Union([t.String(), t.Null()]) });
export const QueueResponse = t.Object({ queue: QueueItem, _links: Links });
export const QueueListResponse = t.Object({ queues: t.Array(t.Object({ id: t.String(), name: t.String() })), _links: Links });
