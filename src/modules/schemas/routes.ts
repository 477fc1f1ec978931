import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { link } from "../../http/links.ts";
import { Query } from "../shared-model.ts";
import { SchemaParams, SchemaResponse } from "./model.ts";
import * as service from "./service.ts";

const tags = ["schemas"];

export function schemaRoutes(deps: Deps) {
  return moduleRoutes("schemas")
    .use(apiContext(deps))
    .get(
      "/queues/:queue_id/schemas/:schema_id",
      async ({ auth, params, origin }) => {
        const schema = await service.getSchema(deps, auth, params.queue_id, params.schema_id);
        const _links = { self: link(origin, `/queues/${params.queue_id}/schemas/${params.schema_id}`), queue: link(origin, `/queues/${params.queue_id}`) };
        return { schema, _links };
      },
      {
        params: SchemaParams, query: Query(), response: SchemaResponse,
        detail: { summary: "Get a queue's current message schema by its schema_id", tags },
      },
    );
}
