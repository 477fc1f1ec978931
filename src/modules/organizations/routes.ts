import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { refusals } from "../../http/openapi.ts";
import { link } from "../../http/links.ts";
import type { Org } from "../../store/index.ts";
import { ApiClientBody, ApiClientParams, ApiClientResponse } from "./model.ts";
import * as service from "./service.ts";
import { jsonOrEmpty } from "../../http/body.ts";

/** `self`, plus the organization's collections so a client can navigate from it rather than build URLs. */
const clientView = (origin: string, org: Org) => ({
  api_client: { id: org.id, name: org.name, events_queue_id: org.eventsQueueId },
  _links: { self: link(origin, `/api_clients/${org.id}`), api_keys: link(origin, "/api_keys"), queues: link(origin, "/queues") },
});

export function organizationRoutes(deps: Deps) {
  return moduleRoutes("api_clients")
    .use(apiContext(deps))
    .get("/api_clients/:api_client_id", async ({ auth, params, origin }) => clientView(origin, await service.getApiClient(deps, auth, params.api_client_id)), {
      params: ApiClientParams,
      response: ApiClientResponse,
      detail: { summary: "Get an api client (organization)", tags: ["api_clients"] },
    })
    .put(
      "/api_clients/:api_client_id",
      async ({ auth, params, body, origin, now }) =>
        clientView(origin, await service.updateApiClient(deps, auth, params.api_client_id, body, now)),
      {
        params: ApiClientParams,
        body: ApiClientBody,
        parse: jsonOrEmpty(),
        response: ApiClientResponse,
        detail: { summary: "Rename an api client (organization), or set the queue its usage events are also published to", tags: ["api_clients"], responses: refusals(409, 422) },
      },
    );
}
