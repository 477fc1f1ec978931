import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { emptyOk, refusals } from "../../http/openapi.ts";
import { itemLinks, link, type Links } from "../../http/links.ts";
import { PagingQuery, pageOf, pagingHeaders } from "../../http/paging.ts";
import { Query } from "../shared-model.ts";
import type { Queue } from "../../store/index.ts";
import { QueueBody, QueueListResponse, QueueParams, QueueResponse } from "./model.ts";
import * as service from "./service.ts";
import { jsonOrEmpty } from "../../http/body.ts";

const queuePath = (id: string) => `/queues/${id}`;

/** Queue `_links`: self, the schema when there is one, and one per listener keyed by its name (docs/api.md). */
function queueView(origin: string, queue: Queue, listeners: { id: string; name: string }[]) {
  const _links: Links = { self: link(origin, queuePath(queue.id)) };
  if (queue.schemaId) _links.schema = link(origin, `${queuePath(queue.id)}/schemas/${queue.schemaId}`);
  for (const l of listeners) _links[l.name] = link(origin, `${queuePath(queue.id)}/listeners/${l.id}`);
  return { queue: { id: queue.id, name: queue.name, schema: queue.schema, schema_id: queue.schemaId }, _links };
}

export function queueRoutes(deps: Deps) {
  return moduleRoutes("queues")
    .use(apiContext(deps))
    .post("/queues", async ({ auth, body, origin, now }) => queueView(origin, await service.createQueue(deps, auth, body, now), []), {
      parse: jsonOrEmpty(),
      body: QueueBody,
      response: QueueResponse,
      detail: { summary: "Create a queue (the body is optional)", tags: ["queues"], responses: refusals(409, 422) },
    })
    .get(
      "/queues",
      async ({ auth, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listQueues(deps, auth, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        return { queues: items.map((q) => ({ id: q.id, name: q.name })), _links: itemLinks(origin, "/queues", items, queuePath) };
      },
      { query: Query(PagingQuery), response: QueueListResponse, detail: { summary: "List queues", tags: ["queues"] } },
    )
    .get(
      "/queues/:queue_id",
      async ({ auth, params, origin }) => {
        const { queue, listeners } = await service.getQueue(deps, auth, params.queue_id);
        return queueView(origin, queue, listeners);
      },
      { params: QueueParams, response: QueueResponse, detail: { summary: "Get a queue", tags: ["queues"] } },
    )
    .put(
      "/queues/:queue_id",
      async ({ auth, params, body, origin, now }) => {
        const { queue, listeners } = await service.updateQueue(deps, auth, params.queue_id, body, now);
        return queueView(origin, queue, listeners);
      },
      { params: QueueParams, body: QueueBody, response: QueueResponse, detail: { summary: "Replace a queue's name and schema", tags: ["queues"], responses: refusals(409, 422) } },
    )
    .delete(
      "/queues/:queue_id",
      async ({ auth, params, now }) => {
        await service.deleteQueue(deps, auth, params.queue_id, now);
        return undefined;
      },
      { params: QueueParams, detail: { summary: "Delete a queue with its listeners and messages", tags: ["queues"], responses: emptyOk("Deleted; the body is empty") } },
    );
}
