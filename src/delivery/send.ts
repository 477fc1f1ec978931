// One delivery attempt (docs/delivery.md, The request): POST <notify_url> with
//   body    {"id","name","queue":{"id","name"},"data","created_at"}, created_at in epoch ms, data as stored
//   headers content-type: application/json, user-agent: fanout/<version>,
//           webhook-id: <message id> (the same on every retry, so receivers deduplicate by it),
//           webhook-timestamp: <unix seconds of this attempt>,
//           webhook-signature: "v1,<sig>" per secret (the previous secret too while its grace lasts)
// Any 2xx acknowledges. A 410 Gone pauses the listener (its delivery waits for it). Everything else fails: other
// statuses (a 3xx too: redirects are never followed), timeouts, refused targets, connection errors. The retry
// decision itself is retry.ts.
import type { AttemptRecord, ClaimedDelivery, Settlement } from "../store/deliveries.ts";
import { signatureHeader } from "./sign.ts";
import { nextAttempt, parseRetryAfter, type Outcome } from "./retry.ts";
import type { SendRequest, SendResult } from "./egress.ts";
import type { DeliveryOutcome } from "../metrics/deliveries.ts";

/** The stored data is already JSON text: splice it in rather than parse and re-serialize a payload of up to 256 KiB. */
export function payloadOf(message: ClaimedDelivery["message"]): string {
  const { id, name, queue, data, createdAt } = message;
  const queueJson = JSON.stringify({ id: queue.id, name: queue.name });
  return `{"id":${JSON.stringify(id)},"name":${JSON.stringify(name)},"queue":${queueJson},"data":${data},"created_at":${createdAt}}`;
}

/**
 * The body's bytes, made once per message: a claim's deliveries of one message to several listeners share its
 * message object (store/sqlite/deliveries.ts), so the payload is built and encoded once, not once per listener.
 */
const bodies = new WeakMap<ClaimedDelivery["message"], Buffer>();

export function bodyOf(message: ClaimedDelivery["message"]): Buffer {
  let bytes = bodies.get(message);
  if (bytes === undefined) {
    bytes = Buffer.from(payloadOf(message), "utf8");
    bodies.set(message, bytes);
  }
  return bytes;
}

/**
 * Headers every delivery to the listener carries, one object per listener object (a claim shares one among its
 * deliveries: store/sqlite/deliveries.ts), so egress writes them out once (http1/request.ts). The listener's own
 * first: fanout's names are refused as its own (headers.ts), and would win anyway.
 */
const listenerHeaders = new WeakMap<ClaimedDelivery["listener"], Readonly<Record<string, string>>>();

function sharedHeadersOf(listener: ClaimedDelivery["listener"], version: string): Readonly<Record<string, string>> {
  return listenerHeaders.getOrInsertComputed(listener, () =>
    Object.freeze({ ...listener.headers, "content-type": "application/json", "user-agent": `fanout/${version}` }));
}

/** A delivery's headers: those its listener's deliveries share, and this attempt's own (id, time, signature). */
export function headersOf(delivery: ClaimedDelivery, body: string | Uint8Array, nowMs: number, version: string) {
  const timestamp = Math.floor(nowMs / 1000);
  const own = {
    "webhook-id": delivery.message.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(delivery.listener.secrets, delivery.message.id, timestamp, body),
  };
  return { shared: sharedHeadersOf(delivery.listener, version), own };
}

/** What one attempt's result means: the outcome for the retry policy and the record for the attempts log. */
export function judge(result: SendResult, attemptedAt: number): { outcome: Outcome; record: AttemptRecord } {
  if (result.status === null) {
    return {
      outcome: { kind: "fail" },
      record: { attemptedAt, statusCode: null, durationMs: result.durationMs, error: result.error, response: null },
    };
  }
  const { status } = result;
  const ok = status >= 200 && status < 300;
  const error = status >= 300 && status < 400 ? "redirect not followed" : null;
  const record = { attemptedAt, statusCode: status, durationMs: result.durationMs, error, response: result.bodySnippet || null };
  if (ok) return { outcome: { kind: "ack" }, record };
  // Standard Webhooks: 410 means the endpoint is gone for good; retrying it would only fail again.
  if (status === 410) return { outcome: { kind: "gone" }, record };
  const retryAfterMs = parseRetryAfter(result.retryAfter, attemptedAt + result.durationMs);
  return { outcome: retryAfterMs === undefined ? { kind: "fail" } : { kind: "fail", retryAfterMs }, record };
}

export type AttemptDeps = {
  send: (request: SendRequest) => Promise<SendResult>;
  now: () => number;
  version: string;
  scheduleMs: number[];
  random?: () => number;
  /** Everything of a SendRequest that is the same for every attempt (policy, timeout, pool). */
  request: Pick<SendRequest, "policy" | "timeoutMs" | "pool" | "resolve" | "insecureTls">;
};

export type AttemptResult = { attempt: number; record: AttemptRecord; next: Settlement; outcome: DeliveryOutcome };

/** An attempt's outcome as /metrics counts it (metrics/deliveries.ts). */
export function outcomeOf(result: SendResult): DeliveryOutcome {
  if (result.status === null) return result.kind;
  return result.status >= 200 && result.status < 300 ? "acknowledged" : "failed";
}

/**
 * Sends one claimed delivery and decides what becomes of it. Never rejects: egress.send never does. `startedAt`:
 * the start the caller counted against the listener's rate (lanes.ts), recorded as the attempt's time.
 */
export async function attempt(delivery: ClaimedDelivery, deps: AttemptDeps, startedAt = deps.now()): Promise<AttemptResult> {
  const body = bodyOf(delivery.message);
  const attemptedAt = startedAt;
  const { shared, own } = headersOf(delivery, body, attemptedAt, deps.version);
  const result = await deps.send({
    ...deps.request,
    url: delivery.listener.notifyUrl,
    body,
    headers: own,
    sharedHeaders: shared,
    poolKey: `notify:${delivery.listener.seq}`,
  });
  const { outcome, record } = judge(result, attemptedAt);
  const number = delivery.attempt + 1;
  const next = nextAttempt(number, outcome, deps.now(), deps.scheduleMs, deps.random);
  return { attempt: number, record, next, outcome: outcomeOf(result) };
}
