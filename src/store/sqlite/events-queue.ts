/**
 * An organization's events queue (docs/api.md, "Operational messages"): each usage event but a publish's is
 * also published there, in the transaction that records it, as a message named by the event's type whose data
 * is the event as GET /v1/events shows it. The delivery worker fans it out like any message, filters included.
 */
import { newId } from "../../lib/ids.ts";
import { mirrored, usageEventView } from "../event-view.ts";
import type { UsageEvent } from "../index.ts";
import { nextMessageSeq } from "./fanout.ts";
import type { Raw } from "./shared.ts";

export function mirrorEvent(tx: Raw, event: UsageEvent, now: number): void {
  const org = tx.$client.query<{ queueId: string | null }, [string]>("SELECT events_queue_id AS queueId FROM orgs WHERE id = ?").get(event.orgId);
  const queueId = org?.queueId;
  if (!queueId || !mirrored(event.type, event.queue?.id ?? null, queueId)) return;
  tx.$client
    .query("INSERT INTO messages (seq, id, org_id, queue_id, name, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .run(nextMessageSeq(tx), newId("message", now), event.orgId, queueId, event.type, JSON.stringify(usageEventView(event)), now);
}
