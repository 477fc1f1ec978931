/**
 * The usage events the delivery worker records, in the transaction of the change they report (docs/api.md,
 * "Operational messages"): a delivery missed, a listener a 410 disabled, a listener's liveness state changed.
 * They carry no API key: the service made the change, not a caller.
 */
import type { Statements } from "./delivery-statements.ts";
import { recordEvent, type Raw } from "./shared.ts";

type Refs = { orgId: string; queueId: string; queueName: string; listenerId: string; listenerName: string };

export function deliveryEvent(s: Statements, raw: Raw, deliveryId: number, type: string, now: number, details?: Record<string, unknown>): void {
  const r = s.deliveryRefs.get({ id: deliveryId }) as (Refs & { messageId: string; messageName: string | null }) | null;
  if (!r) return; // deleted with its message or listener meanwhile: nothing left to report on
  recordEvent(raw, r.orgId, type, now, null, { ...refsOf(r), message: { id: r.messageId, name: r.messageName }, details });
}

export function listenerEvent(s: Statements, raw: Raw, listenerSeq: number, type: string, now: number, details?: Record<string, unknown>): void {
  const r = s.listenerRefs.get({ seq: listenerSeq }) as Refs | null;
  if (r) recordEvent(raw, r.orgId, type, now, null, { ...refsOf(r), details });
}

const refsOf = (r: Refs) => ({ apiKey: null, queue: { id: r.queueId, name: r.queueName }, listener: { id: r.listenerId, name: r.listenerName } });
