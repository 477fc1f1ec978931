/**
 * A usage event as clients see it: in GET /v1/events, and as the data of the message an organization's events
 * queue receives for it (docs/api.md, "Operational messages"). One definition, so the two always agree.
 */
import type { UsageEvent } from "./index.ts";

export type UsageEventView = {
  id: string;
  type: string;
  stored_at: number;
  client: { id: string };
  api_key: { id: string; name: string } | null;
  queue: { id: string; name: string } | null;
  listener: { id: string; name: string } | null;
  message: { id: string; name: string | null } | null;
  portal_session?: { id: string };
  [field: string]: unknown;
};

/** Every reference is present (null when the type has none); a type's own fields (`from`, `to`) come after them. */
export function usageEventView(e: UsageEvent): UsageEventView {
  const view: UsageEventView = {
    id: e.id,
    type: e.type,
    stored_at: e.storedAt,
    client: { id: e.orgId },
    api_key: e.apiKey,
    queue: e.queue,
    listener: e.listener,
    message: e.message,
  };
  if (e.portalSession) view.portal_session = e.portalSession;
  for (const [field, value] of Object.entries(e.details ?? {})) if (!(field in view)) view[field] = value;
  return view;
}

/**
 * Whether an event is also published to the organization's events queue. A publish is known to its publisher,
 * and mirroring each would double the work of every publish; an event about the events queue's own messages
 * would publish another message there, whose own events would follow it without end.
 */
export function mirrored(type: string, queueId: string | null, eventsQueueId: string): boolean {
  if (type === "message_added") return false;
  return !(queueId === eventsQueueId && type.startsWith("message_"));
}
