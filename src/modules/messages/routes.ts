import { Elysia } from "elysia";
import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { emptyOk, refusals } from "../../http/openapi.ts";
import { itemLinks, link, type Links } from "../../http/links.ts";
import { PagingQuery, pageOf, pagingHeaders } from "../../http/paging.ts";
import type { Attempt, DeliveryStatus } from "../../store/index.ts";
import { deliveryProgressView } from "../delivery-progress.ts";
import { Query } from "../shared-model.ts";
import * as m from "./model.ts";
import * as service from "./service.ts";
import type { QueueCache } from "./queue-cache.ts";
import { jsonOrEmpty } from "../../http/body.ts";
import type { HotRoute } from "../../http/hot.ts";
import type { Auth } from "../../http/auth.ts";

const messagePath = (queueId: string, id: string) => `/queues/${queueId}/messages/${id}`;
const tags = ["messages"];
const Pretty = Query();
const ListQuery = Query(PagingQuery);

const ref = (msg: { id: string; name: string | null }) => ({ id: msg.id, name: msg.name });

/** A message's `_links`: itself, its queue, and its attempts (a sub-resource). */
function messageLinks(origin: string, queueId: string, id: string): Links {
  const self = messagePath(queueId, id);
  return { self: link(origin, self), queue: link(origin, `/queues/${queueId}`), attempts: link(origin, `${self}/attempts`) };
}

const deliveryView = (d: DeliveryStatus) => ({ listener: { id: d.listenerId, name: d.listenerName }, ...deliveryProgressView(d) });

const attemptView = (a: Attempt) => ({
  listener: { id: a.listenerId, name: a.listenerName },
  attempt: a.attempt,
  cycle: a.cycle,
  attempted_at: a.attemptedAt,
  status_code: a.statusCode,
  duration_ms: a.durationMs,
  error: a.error,
  response: a.response,
});

function messageList(deps: Deps) {
  return moduleRoutes("messages")
    .use(apiContext(deps))
    .get(
      "/queues/:queue_id/messages",
      async ({ auth, params, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listMessages(deps, auth, params.queue_id, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        const _links = itemLinks(origin, `/queues/${params.queue_id}/messages`, items, (id) => messagePath(params.queue_id, id));
        return { messages: items.map(ref), _links };
      },
      { params: m.QueueParams, query: ListQuery, response: m.MessageListResponse, detail: { summary: "List a queue's messages", tags } },
    )
    .get(
      "/messages",
      async ({ auth, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listMessages(deps, auth, undefined, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        const queueOf = new Map(items.map((msg) => [msg.id, msg.queueId]));
        const _links = itemLinks(origin, "/messages", items, (id) => messagePath(queueOf.get(id)!, id));
        return { messages: items.map(ref), _links };
      },
      { query: ListQuery, response: m.MessageListResponse, detail: { summary: "List the messages of all queues", tags } },
    );
}

function messageItem(deps: Deps) {
  return moduleRoutes("messages")
    .use(apiContext(deps))
    .get(
      "/queues/:queue_id/messages/:message_id",
      async ({ auth, params, origin }) => {
        const { message, deliveries } = await service.getMessage(deps, auth, params.queue_id, params.message_id);
        const view = { ...ref(message), data: message.data, created_at: message.createdAt, deliveries: deliveries.map(deliveryView) };
        return { message: view, _links: messageLinks(origin, params.queue_id, message.id) };
      },
      {
        params: m.MessageParams, query: Pretty, response: m.MessageResponse,
        detail: { summary: "Get a message with its data and its delivery state per listener", tags },
      },
    )
    .get(
      "/queues/:queue_id/messages/:message_id/attempts",
      async ({ auth, params, origin }) => {
        const attempts = await service.messageAttempts(deps, auth, params.queue_id, params.message_id);
        const self = `${messagePath(params.queue_id, params.message_id)}/attempts`;
        return { attempts: attempts.map(attemptView), _links: { self: link(origin, self), message: link(origin, messagePath(params.queue_id, params.message_id)) } };
      },
      { params: m.MessageParams, query: Pretty, response: m.AttemptListResponse, detail: { summary: "List a message's delivery attempts", tags } },
    );
}

/**
 * The parent holds no apiContext of its own: each child has one, and a second one above them would
 * authenticate every request twice. `queues` is shared with the hot publish route.
 */
export function messageRoutes(deps: Deps, queues: QueueCache) {
  return new Elysia().use(messageList(deps)).use(messageItem(deps)).use(messageWrites(deps, queues));
}

type PublishContext = { auth: Auth; params: { queue_id: string }; body: service.MessageCreate; origin: string; now: number };

/** Publishing, as both the app's route and the hot route (http/hot.ts) answer it. */
async function publish(deps: Deps, queues: QueueCache, { auth, params, body, origin, now }: PublishContext) {
  const message = await service.publishMessage(deps, queues, auth, params.queue_id, body, now);
  return { message: ref(message), _links: messageLinks(origin, params.queue_id, message.id) };
}

/** The publish route outside Elysia's pipeline (http/hot.ts); the app's route below documents it and serves the rest. */
export function hotPublishRoute(deps: Deps, queues: QueueCache): HotRoute<service.MessageCreate> {
  return {
    method: "POST", path: "/v1/queues/:queue_id/messages", body: m.MessageCreateBody, empty: { data: null },
    handle: (ctx) => publish(deps, queues, ctx as PublishContext),
  };
}

function messageWrites(deps: Deps, queues: QueueCache) {
  return moduleRoutes("messages")
    .use(apiContext(deps))
    .post(
      "/queues/:queue_id/messages",
      async (ctx) => publish(deps, queues, ctx),
      {
        parse: jsonOrEmpty({ data: null }), params: m.QueueParams, query: Pretty, body: m.MessageCreateBody, response: m.MessageRefResponse,
        detail: { summary: "Publish a message to a queue's listeners (without a body: null data)", tags, responses: refusals(409, 413, 422) },
      },
    )
    .put(
      "/queues/:queue_id/messages/:message_id",
      async ({ auth, params, body, origin, now }) => {
        const message = await service.renameMessage(deps, auth, params.queue_id, params.message_id, body, now);
        return { message: ref(message), _links: messageLinks(origin, params.queue_id, message.id) };
      },
      {
        parse: jsonOrEmpty({}), params: m.MessageParams, query: Pretty, body: m.MessageUpdateBody, response: m.MessageRefResponse,
        detail: { summary: "Rename a message", tags },
      },
    )
    .post(
      "/queues/:queue_id/messages/:message_id/redeliver",
      async ({ auth, params, body, origin, now, set }) => {
        const redelivered = await service.redeliver(deps, auth, params.queue_id, params.message_id, body, now);
        set.status = 202;
        const self = messagePath(params.queue_id, params.message_id);
        return { redelivered, _links: { self: link(origin, `${self}/redeliver`), message: link(origin, self), attempts: link(origin, `${self}/attempts`) } };
      },
      {
        parse: jsonOrEmpty({}), params: m.MessageParams, query: Pretty, body: m.RedeliverBody, response: { 202: m.RedeliverResponse },
        detail: { summary: "Send a message again: each chosen delivery starts a new cycle with a fresh retry schedule", tags, responses: refusals(422) },
      },
    )
    .delete(
      "/queues/:queue_id/messages/:message_id",
      async ({ auth, params, now }) => {
        await service.deleteMessage(deps, auth, params.queue_id, params.message_id, now);
        return undefined;
      },
      { params: m.MessageParams, query: Pretty, detail: { summary: "Delete a message; its pending deliveries stop", tags, responses: emptyOk("Deleted; the body is empty") } },
    );
}
