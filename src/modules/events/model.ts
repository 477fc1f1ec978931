import { t } from "elysia";
import { Links, Query } from "../shared-model.ts";

/** Each category is a type prefix; `all` (the default) also holds api_client_updated. */
export const EventCategory = t.Union([t.Literal("all"), t.Literal("api_keys"), t.Literal("listeners"), t.Literal("messages"), t.Literal("queues")], {
  description: "filter by type prefix (default all)",
});

export const MAX_EVENT_LIMIT = 1000;
export const DEFAULT_EVENT_LIMIT = 100;

export const EventsQuery = Query({
  events: t.Optional(EventCategory),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_EVENT_LIMIT, description: `events per page (default ${DEFAULT_EVENT_LIMIT})` })),
  startAfter: t.Optional(t.Integer({ minimum: 0, description: "stored_at (epoch ms) of the last event seen; only with startAfterId" })),
  startAfterId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "id of the last event seen; only with startAfter" })),
});

const Ref = t.Union([t.Object({ id: t.String(), name: t.String() }), t.Null()]);

/** Every field is always present; a reference that does not apply to the type is null. */
export const UsageEventModel = t.Object({
  id: t.String(),
  type: t.String({
    description: "api_key_added|updated|deleted, api_client_updated, queue_added|updated|deleted, listener_added|updated|deleted|replayed, "
      + "listener_state_changed, listener_disabled, message_added|updated|deleted|redelivered, message_missed, portal_session_added|deleted",
  }),
  stored_at: t.Integer({ description: "epoch ms" }),
  client: t.Object({ id: t.String() }),
  api_key: Ref,
  queue: Ref,
  listener: Ref,
  message: t.Union([t.Object({ id: t.String(), name: t.Union([t.String(), t.Null()]) }), t.Null()]),
  portal_session: t.Optional(t.Object({ id: t.String() }, { description: "the portal session that made the change instead of an API key" })),
  from: t.Optional(t.String({ description: "listener_state_changed: the liveness state before" })),
  to: t.Optional(t.String({ description: "listener_state_changed: the liveness state after" })),
  status: t.Optional(t.Integer({ description: "listener_disabled: the receiver's status (410)" })),
}, { additionalProperties: true });

export const EventsResponse = t.Object({ events: t.Array(UsageEventModel), _links: Links });
