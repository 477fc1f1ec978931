import { t, type TSchema } from "elysia";
import { Type } from "@sinclair/typebox";
import { Links } from "../shared-model.ts";

/**
 * Only the shape here (400): the rules a session must keep (bounds, origins, URLs, the logo's size) are the
 * service's, which names each broken one in a 422 (docs/portal.md).
 */
export const PortalSessionCreateBody = t.Object(
  {
    queue_id: t.String({ minLength: 1, maxLength: 128, description: "the queue whose listeners the portal shows" }),
    listener_ids: t.Optional(t.Array(t.String({ maxLength: 128 }), {
      description: "up to 100 of the queue's listeners; absent: all of them, those made later included. A listener made through the portal joins the session.",
    })),
    can_manage: t.Optional(t.Boolean({ description: "default true; false: the portal may only read" })),
    expires_in: t.Optional(Type.Integer({ description: "seconds, 60 to 86,400 (default 3,600)" })),
    allowed_origins: t.Optional(t.Array(t.String({ maxLength: 300 }), {
      description: "up to 10 origins (https, or http on loopback) whose pages may embed the portal in a frame; default none",
    })),
    branding: t.Optional(t.Object(
      {
        name: t.Optional(t.String({ description: "1 to 60 characters, shown as the portal's title" })),
        logo_url: t.Optional(t.String({ description: "an https URL, or a data: URL of an image (png, jpeg, gif, webp, avif, svg+xml) of at most 64 KB" })),
        accent: t.Optional(t.String({ description: "the accent colour, #rrggbb" })),
      },
      { additionalProperties: false },
    )),
    return_url: t.Optional(t.String({ maxLength: 2048, description: "an https URL the portal links back to, also once the session has ended" })),
  },
  { additionalProperties: false },
);

export const PortalSessionParams = t.Object({ portal_session_id: t.String() });

const Nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()]);

const fields = {
  id: t.String(),
  queue_id: t.String(),
  queue_name: t.String(),
  listener_ids: Nullable(t.Array(t.String(), { description: "null: every listener of the queue, those made later included" })),
  can_manage: t.Boolean(),
  status: t.Union([t.Literal("active"), t.Literal("expired"), t.Literal("revoked")]),
  created_at: t.Integer({ description: "epoch ms" }),
  expires_at: t.Integer({ description: "epoch ms" }),
  revoked_at: Nullable(t.Integer({ description: "epoch ms" })),
  allowed_origins: t.Array(t.String()),
  branding: t.Object({ name: Nullable(t.String()), logo_url: Nullable(t.String()), accent: Nullable(t.String()) }),
  return_url: Nullable(t.String()),
};
const PortalSessionItem = t.Object(fields);

/** The only answer that carries the token: inside `url`, once. */
export const PortalSessionCreatedResponse = t.Object({
  portal_session: t.Object({
    ...fields,
    url: t.String({ description: "the portal's address for the customer: `<base>/portal/<id>#<token>`; the token is shown only here" }),
  }),
  _links: Links,
});
export const PortalSessionResponse = t.Object({ portal_session: PortalSessionItem, _links: Links });
export const PortalSessionListResponse = t.Object({ portal_sessions: t.Array(PortalSessionItem), _links: Links });
