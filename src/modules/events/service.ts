import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope } from "../../http/scopes.ts";
import type { UsageEvent } from "../../store/index.ts";
import { DEFAULT_EVENT_LIMIT } from "./model.ts";

/** Events are returned and kept for 24 hours (docs/delivery.md, Usage events). */
export const EVENT_RETENTION_MS = 24 * 60 * 60 * 1000;

export type EventCategory = "all" | "api_keys" | "listeners" | "messages" | "queues";

/** Categories filter by type prefix; the trailing underscore keeps `queue_` from matching more. */
const PREFIX: Record<EventCategory, string | null> = {
  all: null,
  api_keys: "api_key_",
  listeners: "listener_",
  messages: "message_",
  queues: "queue_",
};

export type EventsRequest = { events?: EventCategory; limit?: number; startAfter?: number; startAfterId?: string };
export type EventsPage = { events: UsageEvent[]; more: boolean };

/**
 * One page of the organization's events of the last 24 hours. Events span the whole organization, so reading
 * them takes a read scope on events for every target (`*`). The store is asked for one more than the page
 * holds, which tells whether a next page exists without counting.
 */
export async function listEvents(deps: Deps, auth: Auth, q: EventsRequest, now: number): Promise<EventsPage> {
  requireScope(auth.key, "events", "read");
  const limit = q.limit ?? DEFAULT_EVENT_LIMIT;
  // startAfter takes effect only together with startAfterId; one alone is ignored (docs/delivery.md).
  const after = q.startAfter !== undefined && q.startAfterId !== undefined ? { storedAt: q.startAfter, id: q.startAfterId } : null;
  const rows = await deps.store.events.list(auth.orgId, {
    prefix: PREFIX[q.events ?? "all"],
    after,
    limit: limit + 1,
    since: now - EVENT_RETENTION_MS,
  });
  return { events: rows.slice(0, limit), more: rows.length > limit };
}
