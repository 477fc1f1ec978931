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
  },
  { additionalProperties: false },
);

export const ApiClientParams = t.Object({ api_client_id: t.String() });

export const ApiClientResponse = t.Object({ api_client: t.Object({ id: t.String(), name: t.String() }), _links: Links });
