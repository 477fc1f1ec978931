import { t } from "elysia";
import { Type } from "@sinclair/typebox";
import { Links, ResourceName } from "../shared-model.ts";

/**
 * Absolute http(s) URL, shape only (400 when it fails). Whether its host may be reached is the egress policy's
 * call, made in the service (422), because it needs DNS and the configured allow list.
 */
export const HttpUrl = t.String({
  maxLength: 2048,
  pattern: "^[hH][tT][tT][pP][sS]?://[^\\s/?#]+(?:[/?#]\\S*)?$",
  description: "an absolute http or https URL; its host must resolve to a public address or into --allow-targets",
});

const Enabled = t.Boolean({ description: "false pauses the listener: its deliveries wait, as while it is down; true resumes them" });

export const ListenerCreateBody = t.Object(
  { name: ResourceName, notify_url: HttpUrl, liveness_url: HttpUrl, enabled: t.Optional(Enabled) },
  { additionalProperties: false, description: "name and both URLs are required; enabled defaults to true; the names `self` and `schema` are refused (422)" },
);

export const ListenerUpdateBody = t.Object(
  { name: t.Optional(ResourceName), notify_url: t.Optional(HttpUrl), liveness_url: t.Optional(HttpUrl), enabled: t.Optional(Enabled) },
  { additionalProperties: false, description: "only the given properties change" },
);

export const ReplayBody = t.Object(
  {
    since: Type.Integer({ minimum: 0, description: "epoch ms: messages created at or after it" }),
    until: t.Optional(Type.Integer({ minimum: 0, description: "epoch ms: messages created before it (default: now)" })),
    only: t.Optional(t.Union([t.Literal("missed"), t.Literal("all")], { description: "missed (default): missed deliveries; all: missed and acknowledged" })),
  },
  { additionalProperties: false },
);
export const ReplayResponse = t.Object({
  replayed: Type.Integer({ description: "deliveries that start a new cycle; the delivery worker takes them up in the background" }),
  _links: Links,
});

/**
 * `pretty` is honoured by the app for every route ("", "true" or "1" indent the JSON). Declared as a string,
 * not shared-model's boolean, because a boolean refuses the bare `?pretty` the app accepts.
 */

export const QueueParams = t.Object({ queue_id: t.String() });
export const ListenerParams = t.Object({ queue_id: t.String(), listener_id: t.String() });

const ListenerRef = t.Object({ id: t.String(), name: t.String() });

export const ListenerFull = t.Object({
  id: t.String(),
  name: t.String(),
  notify_url: t.String(),
  liveness_url: t.String(),
  liveness: t.Object({
    state: t.Union([t.Literal("pending"), t.Literal("stable"), t.Literal("unstable"), t.Literal("down")]),
    success_count: t.Integer(),
    failure_count: t.Integer(),
  }),
  messages: t.Object({
    acknowledged_count: t.Integer(),
    missed: t.Array(t.String(), { description: "ids of the newest missed messages (at most 100)" }),
    missed_count: t.Integer(),
  }),
  enabled: Enabled,
});

const Secret = t.String({ description: "`whsec_` + base64; the Standard Webhooks signing key" });

export const ListenerCreatedResponse = t.Object({ listener: ListenerRef, secret: Secret, _links: Links });
export const ListenerRefResponse = t.Object({ listener: ListenerRef, _links: Links });
export const ListenerResponse = t.Object({ listener: ListenerFull, _links: Links });
export const ListenerListResponse = t.Object({ listeners: t.Array(ListenerFull), _links: Links });
export const SecretResponse = t.Object({
  secret: Secret,
  previous_secret: t.Optional(t.String({ description: "the rotated-out secret, still signing beside the new one" })),
  previous_secret_expires_at: t.Optional(t.Integer({ description: "epoch ms at which the previous secret stops signing" })),
  _links: Links,
});
