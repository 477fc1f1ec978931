import { t } from "elysia";
import { Type } from "@sinclair/typebox";
import { Links, Nullable, ResourceName } from "../shared-model.ts";
import { DeliveryProgressFields } from "../delivery-progress.ts";

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

/**
 * Checked by the service, which names the offending path of an invalid filter in a 422 (docs/api.md, "Filters");
 * here only its kind, so `{"names": 5}` is a refused filter rather than a malformed body.
 */
export const Filter = t.Object({}, {
  additionalProperties: true,
  description: "`names`: 1 to 50 patterns on the message name (`*` matches any run of characters); `data`: conditions on "
    + "the payload by dot path, with $eq $ne $gt $gte $lt $lte $in $nin $exists $prefix $contains and $and $or $not. "
    + "A message must satisfy each part given. At most 8 KB, 200 nodes, 8 levels, 10 segments a path.",
  examples: [{ names: ["order.*", "invoice.paid"], data: { "customer.tier": "gold", total: { $gte: 100 } } }],
});
const FilterField = t.Union([Filter, t.Null()], { description: "which messages the listener receives; null or absent: every message" });

/** Checked by the service (reserved names, sizes: 422); values may be credentials (docs/api.md, "Headers"). */
export const Headers = t.Record(t.String(), t.String(), {
  description: "up to 20 headers sent with every delivery and liveness probe; reserved names (host, content-type, webhook-*, …) are refused",
  examples: [{ authorization: "Bearer <token>" }],
});
const HeadersField = t.Union([Headers, t.Null()], { description: "null or absent: none; shown as `[hidden]` to keys that may only read the listener" });

// TypeBox's own Integer: Elysia's t.Integer makes a body without content pass as {} (it coerces numbers).
const RateLimit = t.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), t.Null()], {
  description: "deliveries started per second to this listener at most; null: no limit beyond concurrency",
});
const Concurrency = t.Union([Type.Integer({ minimum: 1, maximum: 256 }), t.Null()], {
  description: "requests in flight to this listener at most; null: the server's --listener-concurrency",
});
const Ordering = t.Union([t.Literal("unordered"), t.Literal("fifo")], {
  description: "fifo: one delivery at a time, in publish order, the next once the one before is final (head-of-line blocking)",
});

/** The fields both create and update take besides the name and URLs. */
const Settings = {
  enabled: t.Optional(Enabled),
  filter: t.Optional(FilterField),
  headers: t.Optional(HeadersField),
  rate_limit: t.Optional(RateLimit),
  concurrency: t.Optional(Concurrency),
  ordering: t.Optional(Ordering),
};

export const ListenerCreateBody = t.Object(
  { name: ResourceName, notify_url: HttpUrl, liveness_url: HttpUrl, ...Settings },
  { additionalProperties: false, description: "name and both URLs are required; enabled defaults to true; the names `self` and `schema` are refused (422)" },
);

export const ListenerUpdateBody = t.Object(
  { name: t.Optional(ResourceName), notify_url: t.Optional(HttpUrl), liveness_url: t.Optional(HttpUrl), ...Settings },
  { additionalProperties: false, description: "only the given properties change; null removes a filter, the headers, a rate limit or a concurrency" },
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
  filter: FilterField,
  headers: HeadersField,
  rate_limit: RateLimit,
  concurrency: Concurrency,
  ordering: Ordering,
  line: t.Optional(t.Object({
    head: t.Union([t.Object({
      message_id: t.String(),
      state: t.Union([t.Literal("pending"), t.Literal("sending")]),
      attempts: t.Integer(),
      next_attempt_at: t.Union([t.Integer(), t.Null()], { description: "epoch ms; null while it waits for its listener" }),
    }), t.Null()], { description: "the delivery in flight, else the oldest one waiting; everything behind it waits for it" }),
    waiting: t.Integer({ description: "deliveries waiting in the line" }),
  }, { description: "a FIFO listener's line, in GET of one listener" })),
});

export const TestMessageResponse = t.Object({ message: ListenerRef, _links: Links }, { description: "the test message, whose deliveries and attempts GET …/messages/{m} shows" });

export const FilterTestBody = t.Object(
  {
    filter: Filter,
    message: t.Optional(t.Object({ name: t.Optional(t.Union([ResourceName, t.Null()])), data: t.Unknown() }, { additionalProperties: false })),
  },
  { additionalProperties: false, description: "with `message`: whether the filter takes it; without: how many of the queue's 100 newest messages it takes" },
);
export const FilterTestResponse = t.Union([
  t.Object({ matches: t.Boolean() }),
  t.Object({ matched: Type.Integer({ description: "messages the filter takes" }), of: Type.Integer({ description: "messages looked at: the queue's newest, at most 100" }) }),
]);

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

const ListenerDelivery = t.Object({
  message: t.Object({ id: t.String(), name: Nullable(t.String()), created_at: t.Integer({ description: "epoch ms" }) }),
  ...DeliveryProgressFields,
  updated_at: t.Integer({ description: "epoch ms of the last change" }),
});
export const ListenerDeliveryListResponse = t.Object(
  { deliveries: t.Array(ListenerDelivery), _links: Links },
  { description: "newest message first; each message's attempts are at GET …/messages/{m}/attempts" },
);
