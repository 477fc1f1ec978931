import { t } from "elysia";
import { Type } from "@sinclair/typebox";
import { Links, Nullable, ResourceName } from "../shared-model.ts";
import { DeliveryProgressFields } from "../delivery-progress.ts";

/**
 * Any JSON value. Spelled out as a union rather than t.Unknown because TypeBox lets an Unknown property be
 * absent, and `data` is required whenever a body is sent (docs/api.md).
 */
export const MessageData = t.Union(
  [t.Null(), t.Boolean(), t.Number(), t.String(), t.Array(t.Unknown()), t.Record(t.String(), t.Unknown())],
  { description: "any JSON value; on a queue with a schema, a string is parsed as JSON and the parsed value is checked" },
);

export const MessageCreateBody = t.Object(
  { name: t.Optional(ResourceName), data: MessageData },
  { additionalProperties: false, description: "optional: a request without a body publishes a message with null data" },
);

export const MessageUpdateBody = t.Object(
  { name: t.Optional(t.Union([ResourceName, t.Null()], { description: "null removes the name; absent keeps it" })) },
  { additionalProperties: false, description: "optional: without a body nothing changes" },
);

export const QueueParams = t.Object({ queue_id: t.String() });
export const MessageParams = t.Object({ queue_id: t.String(), message_id: t.String() });

const MessageRef = t.Object({ id: t.String(), name: t.Union([t.String(), t.Null()]) });
const ListenerRef = t.Object({ id: t.String(), name: t.String() });

const Delivery = t.Object({
  listener: ListenerRef,
  ...DeliveryProgressFields,
});

const MessageFull = t.Object({
  id: t.String(),
  name: t.Union([t.String(), t.Null()]),
  data: t.Unknown({ description: "the data as published (a string stays a string)" }),
  created_at: t.Integer({ description: "epoch ms" }),
  deliveries: t.Array(Delivery, { description: "one per listener that existed when the message was published" }),
});

const Attempt = t.Object({
  listener: ListenerRef,
  attempt: t.Integer({ description: "the attempt's number within its cycle, from 1" }),
  cycle: t.Integer({ description: "the delivery's cycle the attempt belongs to" }),
  attempted_at: t.Integer({ description: "epoch ms" }),
  status_code: Nullable(t.Integer()),
  duration_ms: t.Integer(),
  error: Nullable(t.String({ description: "why the attempt failed without a status (timeout, refused address, …)" })),
  response: Nullable(t.String({ description: "the start of the receiver's response body (at most 1 KiB, as UTF-8); null without an answer or with an empty body" })),
});

export const MessageRefResponse = t.Object({ message: MessageRef, _links: Links });
export const MessageResponse = t.Object({ message: MessageFull, _links: Links });
export const MessageListResponse = t.Object({ messages: t.Array(MessageRef), _links: Links });
export const AttemptListResponse = t.Object({ attempts: t.Array(Attempt, { description: "newest first" }), _links: Links });

export const RedeliverBody = t.Object(
  { listeners: t.Optional(t.Array(t.String({ minLength: 1 }), { description: "listener ids; default: every listener the message was fanned out to" })) },
  { additionalProperties: false, description: "optional: without a body every listener of the message gets it again" },
);
export const RedeliverResponse = t.Object({
  redelivered: Type.Integer({ description: "deliveries that start a new cycle now (one in flight is left to finish)" }),
  _links: Links,
});
