import { t } from "elysia";
import { Links, ResourceId } from "../shared-model.ts";

/**
 * `name` is only shaped here (a non-empty string, else 400); whether it is a valid reverse-DNS organization name,
 * its 253-character limit included, is decided by the service (422): such a string is well-formed but refused.
 * The 1000-character bound only keeps absurd input a shape error.
 */
export const ApiClientBody = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 1000, description: "reverse domain notation, e.g. com.example.team" })),
    id: t.Optional(ResourceId),
    events_queue_id: t.Optional(t.Union([ResourceId, t.Null()], {
      description: "a queue of the organization that every usage event but message_added is also published to; null: none",
    })),
  },
  { additionalProperties: false },
);

export const ApiClientParams = t.Object({ api_client_id: t.String() });

export const ApiClientResponse = t.Object({
  api_client: t.Object({ id: t.String(), name: t.String(), events_queue_id: t.Union([t.String(), t.Null()]) }),
  _links: Links,
});
