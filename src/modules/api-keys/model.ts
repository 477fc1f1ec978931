import { t } from "elysia";
import { Links, ResourceId, ResourceName } from "../shared-model.ts";

/**
 * Every resource a scope may name is accepted here (anything else is 400); the protected ones are refused by the
 * service with 422, because they are well-formed but not grantable through the interface (docs/api.md).
 */
export const ScopeResourceModel = t.Union(
  [
    t.Literal("api_clients"),
    t.Literal("api_keys"),
    t.Literal("events"),
    t.Literal("queues"),
    t.Literal("listeners"),
    t.Literal("messages"),
    t.Literal("schemas"),
    t.Literal("stats"),
    t.Literal("subscriptions"),
  ],
  { description: "resource kind the scope covers" },
);
export const AccessModel = t.Union([t.Literal("read"), t.Literal("write")], { description: "write includes read" });
export const StatusModel = t.Union([t.Literal("enabled"), t.Literal("disabled")]);

/**
 * `targets` is an array or a lone `"*"`; the service normalises the latter to `["*"]`.
 * The items are plain strings (`"*"` is one): Elysia 1.4 coerces a lone string into an array of its characters
 * when the items are a union, so `"q_1"` would pass as `["q","_","1"]`.
 */
const TargetsModel = t.Union(
  [t.Array(ResourceId, { minItems: 1, maxItems: 100 }), t.Literal("*")],
  { description: '`["*"]`, a lone `"*"`, or ids of the resources (for listeners, messages and schemas also queue ids)' },
);

export const ScopeModel = t.Object(
  { resource: ScopeResourceModel, access: AccessModel, targets: TargetsModel },
  { additionalProperties: false },
);

export const ApiKeyBody = t.Object(
  {
    name: t.Optional(ResourceName),
    status: t.Optional(StatusModel),
    scopes: t.Optional(t.Array(ScopeModel, { maxItems: 100 })),
  },
  { additionalProperties: false },
);

export const ApiKeyParams = t.Object({ api_key_id: t.String() });

const StoredScope = t.Object({ resource: t.String(), access: t.String(), targets: t.Array(t.String()) });
const ApiKeyItem = t.Object({ id: t.String(), name: t.String(), status: t.String(), scopes: t.Array(StoredScope) });

/** The only response that carries the secret: it is shown once, on create. */
export const ApiKeyCreatedResponse = t.Object({
  api_key: t.String({ description: "the secret; shown only here" }),
  id: t.String(),
  name: t.String(),
  status: t.String(),
  scopes: t.Array(StoredScope),
  _links: Links,
});
export const ApiKeyResponse = t.Object({ api_key: ApiKeyItem, _links: Links });
export const ApiKeyListResponse = t.Object({ api_keys: t.Array(ApiKeyItem), _links: Links });
