import { Query } from "../shared-model.ts";
import { Elysia } from "elysia";
import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { emptyOk, refusals } from "../../http/openapi.ts";
import { itemLinks, link, type Links } from "../../http/links.ts";
import { PagingQuery, pageOf, pagingHeaders } from "../../http/paging.ts";
import { makeTargetPolicy, type TargetPolicy } from "../../delivery/egress.ts";
import type { Listener, ListenerDelivery, ListenerLine, ListenerSecrets } from "../../store/index.ts";
import * as m from "./model.ts";
import * as service from "./service.ts";
import { deliveryProgressView } from "../delivery-progress.ts";
import { testFilter } from "./filter-test.ts";

const listenerPath = (queueId: string, id: string) => `/queues/${queueId}/listeners/${id}`;
const tags = ["listeners"];
const Pretty = Query();
const ListQuery = Query(PagingQuery);

export const fullListener = (l: Listener) => ({
  id: l.id,
  name: l.name,
  notify_url: l.notifyUrl,
  liveness_url: l.livenessUrl,
  liveness: { state: l.liveness.state, success_count: l.liveness.successCount, failure_count: l.liveness.failureCount },
  messages: { acknowledged_count: l.messages.acknowledgedCount, missed: l.messages.missed, missed_count: l.messages.missedCount },
  enabled: l.enabled,
  filter: l.filter,
  headers: l.headers,
  rate_limit: l.rateLimit,
  concurrency: l.concurrency,
  ordering: l.ordering,
  ...(l.line && { line: lineView(l.line) }),
});

const lineView = (line: ListenerLine) => ({
  head: line.head && { message_id: line.head.messageId, state: line.head.state, attempts: line.head.attempts, next_attempt_at: line.head.nextAttemptAt },
  waiting: line.waiting,
});

/** A listener's `_links`: itself, its queue, and its secret (a sub-resource). */
function listenerLinks(origin: string, l: Listener): Links {
  const self = listenerPath(l.queueId, l.id);
  return { self: link(origin, self), queue: link(origin, `/queues/${l.queueId}`), secret: link(origin, `${self}/secret`) };
}

/** The previous secret appears only while it still signs. */
function secretView(origin: string, queueId: string, id: string, s: ListenerSecrets) {
  const base = listenerPath(queueId, id);
  const _links = { self: link(origin, `${base}/secret`), listener: link(origin, base), rotate: link(origin, `${base}/secret/rotate`) };
  if (s.previous === null || s.previousUntil === null) return { secret: s.current, _links };
  return { secret: s.current, previous_secret: s.previous, previous_secret_expires_at: s.previousUntil, _links };
}

const deliveryView = (d: ListenerDelivery) => ({
  message: { id: d.message.id, name: d.message.name, created_at: d.message.createdAt },
  ...deliveryProgressView(d),
  updated_at: d.updatedAt,
});

/** Lists are filtered by the service to what the key may read. */
function listRoutes(deps: Deps) {
  return moduleRoutes("listeners")
    .use(apiContext(deps))
    .get(
      "/queues/:queue_id/listeners",
      async ({ auth, params, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listListeners(deps, auth, params.queue_id, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        const _links = itemLinks(origin, `/queues/${params.queue_id}/listeners`, items, (id) => listenerPath(params.queue_id, id));
        return { listeners: items.map(fullListener), _links };
      },
      { params: m.QueueParams, query: ListQuery, response: m.ListenerListResponse, detail: { summary: "List a queue's listeners", tags } },
    )
    .get(
      "/listeners",
      async ({ auth, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listListeners(deps, auth, undefined, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        const queueOf = new Map(items.map((l) => [l.id, l.queueId]));
        const _links = itemLinks(origin, "/listeners", items, (id) => listenerPath(queueOf.get(id)!, id));
        return { listeners: items.map(fullListener), _links };
      },
      { query: ListQuery, response: m.ListenerListResponse, detail: { summary: "List the listeners of all queues", tags } },
    )
    .get(
      "/queues/:queue_id/listeners/:listener_id/deliveries",
      async ({ auth, params, query, origin, request, set }) => {
        const page = pageOf(query);
        const { items, total } = await service.listenerDeliveries(deps, auth, params.queue_id, params.listener_id, page);
        Object.assign(set.headers, pagingHeaders(request, origin, page, total));
        const self = `${listenerPath(params.queue_id, params.listener_id)}/deliveries`;
        const _links = itemLinks(origin, self, items.map((d) => ({ id: d.message.id, name: null })), (id) => `/queues/${params.queue_id}/messages/${id}`);
        return { deliveries: items.map(deliveryView), _links };
      },
      {
        params: m.ListenerParams, query: ListQuery, response: m.ListenerDeliveryListResponse,
        detail: { summary: "List a listener's deliveries, newest message first, with their state, attempts and last answer", tags },
      },
    );
}

/**
 * The parent holds no apiContext of its own: each child has one, and a second one above them would
 * authenticate every request twice.
 */
export function listenerRoutes(deps: Deps) {
  // Parsed once: the allow list is fixed for the process, and a bad entry already stopped startup in config.
  const policy = makeTargetPolicy(deps.config.allowTargets);
  return new Elysia().use(listRoutes(deps)).use(itemRoutes(deps, policy)).use(secretRoutes(deps)).use(replayRoutes(deps)).use(filterTestRoutes(deps));
}

/** Reads only: it stores nothing, so it takes read scope and answers 200. */
function filterTestRoutes(deps: Deps) {
  return moduleRoutes("listeners")
    .use(apiContext(deps))
    .post(
      "/queues/:queue_id/filter_test",
      async ({ auth, params, body }) => testFilter(deps, auth, params.queue_id, body),
      {
        params: m.QueueParams, query: Pretty, body: m.FilterTestBody, response: m.FilterTestResponse,
        detail: {
          summary: "Try a listener filter: against one message, or against the queue's 100 newest messages",
          tags, responses: refusals(422),
        },
      },
    );
}

/** A replay is taken up by the delivery worker in the background: 202, with how many deliveries start again. */
function replayRoutes(deps: Deps) {
  return moduleRoutes("listeners")
    .use(apiContext(deps))
    .post(
      "/queues/:queue_id/listeners/:listener_id/test",
      async ({ auth, params, origin, now, set }) => {
        const message = await service.sendTestMessage(deps, auth, params.queue_id, params.listener_id, now);
        set.status = 202;
        const listener = listenerPath(params.queue_id, params.listener_id);
        return {
          message: { id: message.id, name: message.name },
          _links: { self: link(origin, `${listener}/test`), listener: link(origin, listener), message: link(origin, `/queues/${params.queue_id}/messages/${message.id}`) },
        };
      },
      {
        params: m.ListenerParams, query: Pretty, response: { 202: m.TestMessageResponse },
        detail: { summary: "Send a signed test message (`fanout.test`) to this listener only; its attempts are logged like any delivery's", tags },
      },
    )
    .post(
      "/queues/:queue_id/listeners/:listener_id/replay",
      async ({ auth, params, body, origin, now, set }) => {
        const replayed = await service.replay(deps, auth, params.queue_id, params.listener_id, body, now);
        set.status = 202;
        const listener = listenerPath(params.queue_id, params.listener_id);
        return { replayed, _links: { self: link(origin, `${listener}/replay`), listener: link(origin, listener) } };
      },
      {
        params: m.ListenerParams, query: Pretty, body: m.ReplayBody, response: { 202: m.ReplayResponse },
        detail: {
          summary: "Replay a time window of the listener's final deliveries (missed, or all): each starts a new cycle with a fresh retry schedule",
          tags, responses: refusals(422),
        },
      },
    );
}

function itemRoutes(deps: Deps, policy: TargetPolicy) {
  return moduleRoutes("listeners")
    .use(apiContext(deps))
    .post(
      "/queues/:queue_id/listeners",
      async ({ auth, params, body, origin, now }) => {
        const { listener, secret } = await service.createListener(deps, policy, auth, params.queue_id, body, now);
        return { listener: { id: listener.id, name: listener.name }, secret, _links: listenerLinks(origin, listener) };
      },
      {
        params: m.QueueParams, query: Pretty, body: m.ListenerCreateBody, response: m.ListenerCreatedResponse,
        detail: { summary: "Register a listener on a queue; the response carries its signing secret", tags, responses: refusals(409, 422) },
      },
    )
    .get(
      "/queues/:queue_id/listeners/:listener_id",
      async ({ auth, params, origin }) => {
        const listener = await service.getListener(deps, auth, params.queue_id, params.listener_id);
        return { listener: fullListener(listener), _links: listenerLinks(origin, listener) };
      },
      { params: m.ListenerParams, query: Pretty, response: m.ListenerResponse, detail: { summary: "Get a listener", tags } },
    )
    .put(
      "/queues/:queue_id/listeners/:listener_id",
      async ({ auth, params, body, origin, now }) => {
        const listener = await service.updateListener(deps, policy, auth, params.queue_id, params.listener_id, body, now);
        return { listener: { id: listener.id, name: listener.name }, _links: listenerLinks(origin, listener) };
      },
      {
        params: m.ListenerParams, query: Pretty, body: m.ListenerUpdateBody, response: m.ListenerRefResponse,
        detail: { summary: "Change a listener's name or URLs, or pause and resume it (enabled)", tags, responses: refusals(409, 422) },
      },
    )
    .delete(
      "/queues/:queue_id/listeners/:listener_id",
      async ({ auth, params, now }) => {
        await service.deleteListener(deps, auth, params.queue_id, params.listener_id, now);
        return undefined;
      },
      { params: m.ListenerParams, query: Pretty, detail: { summary: "Delete a listener; its pending deliveries stop", tags, responses: emptyOk("Deleted; the body is empty") } },
    );
}

/** The signing secret, readable and rotatable on its own so a rotation needs no listener update. */
function secretRoutes(deps: Deps) {
  return moduleRoutes("listeners")
    .use(apiContext(deps))
    .get(
      "/queues/:queue_id/listeners/:listener_id/secret",
      async ({ auth, params, origin, now }) =>
        secretView(origin, params.queue_id, params.listener_id, await service.listenerSecrets(deps, auth, params.queue_id, params.listener_id, now)),
      { params: m.ListenerParams, query: Pretty, response: m.SecretResponse, detail: { summary: "Get a listener's signing secret(s)", tags } },
    )
    .post(
      "/queues/:queue_id/listeners/:listener_id/secret/rotate",
      async ({ auth, params, origin, now }) =>
        secretView(origin, params.queue_id, params.listener_id, await service.rotateListenerSecret(deps, auth, params.queue_id, params.listener_id, now)),
      {
        params: m.ListenerParams, query: Pretty, response: m.SecretResponse,
        detail: { summary: "Rotate a listener's signing secret; the old one keeps signing for 24 hours", tags },
      },
    );
}
