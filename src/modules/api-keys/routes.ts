import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { emptyOk, refusals } from "../../http/openapi.ts";
import { itemLinks, link } from "../../http/links.ts";
import { PagingQuery, pageOf, pagingHeaders } from "../../http/paging.ts";
import { Query } from "../shared-model.ts";
import type { ApiKey } from "../../store/index.ts";
import { ApiKeyBody, ApiKeyCreatedResponse, ApiKeyListResponse, ApiKeyParams, ApiKeyResponse } from "./model.ts";
import * as service from "./service.ts";
import { jsonOrEmpty } from "../../http/body.ts";

const keyPath = (id: string) => `/api_keys/${id}`;

/** The public view of a key: never its secret or hash, nor the internal owner flag. */
const itemOf = (k: ApiKey) => ({ id: k.id, name: k.name, status: k.status, scopes: k.scopes });
const keyView = (origin: string, k: ApiKey) => ({ api_key: itemOf(k), _links: { self: link(origin, keyPath(k.id)) } });

export function apiKeyRoutes(deps: Deps) {
  return moduleRoutes("api_keys")
    .use(apiContext(deps))
    .post(
      "/api_keys",
      async ({ auth, body, origin, now }) => {
        const { key, secret } = await service.createApiKey(deps, auth, body, now);
        return { api_key: secret, ...itemOf(key), _links: { self: link(origin, keyPath(key.id)) } };
      },
      {
        body: ApiKeyBody,
        parse: jsonOrEmpty(),
        response: ApiKeyCreatedResponse,
        detail: { summary: "Create an API key (the secret is shown only here)", tags: ["api_keys"], responses: refusals(422) },
      },
    )
    .get(
      "/api_keys",
      async ({ auth, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listApiKeys(deps, auth, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        return { api_keys: items.map(itemOf), _links: itemLinks(origin, "/api_keys", items, keyPath) };
      },
      { query: Query(PagingQuery), response: ApiKeyListResponse, detail: { summary: "List API keys", tags: ["api_keys"] } },
    )
    .get("/api_keys/:api_key_id", async ({ auth, params, origin }) => keyView(origin, await service.getApiKey(deps, auth, params.api_key_id)), {
      params: ApiKeyParams,
      response: ApiKeyResponse,
      detail: { summary: "Get an API key (never its secret)", tags: ["api_keys"] },
    })
    .put(
      "/api_keys/:api_key_id",
      async ({ auth, params, body, origin, now }) => keyView(origin, await service.updateApiKey(deps, auth, params.api_key_id, body, now)),
      {
        params: ApiKeyParams,
        body: ApiKeyBody,
        parse: jsonOrEmpty(),
        response: ApiKeyResponse,
        detail: { summary: "Update an API key's name, status or scopes (scopes replace the whole array)", tags: ["api_keys"], responses: refusals(422, 423) },
      },
    )
    .delete(
      "/api_keys/:api_key_id",
      async ({ auth, params, now }) => {
        await service.deleteApiKey(deps, auth, params.api_key_id, now);
        return undefined;
      },
      { params: ApiKeyParams, detail: { summary: "Delete an API key", tags: ["api_keys"], responses: emptyOk("Deleted; the body is empty", 423) } },
    );
}
