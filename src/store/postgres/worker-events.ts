/**
 * The usage events the delivery worker records on PostgreSQL (docs/api.md, "Operational messages"): a delivery
 * missed, a listener a 410 disabled, a listener's liveness state changed. Each is written in the transaction of
 * the change it reports; the worker's usual statements run alone, so a step that reports something runs its
 * statement in a transaction with the events instead (deliveries.ts). They carry no API key: the service made
 * the change, not a caller.
 */
import type { SQL } from "bun";
import type { Completion } from "../deliveries.ts";
import { writeEvent, type Exec } from "./event-writes.ts";

type DeliveryRefs = {
  id: string; org_id: string; queue_id: string; queue_name: string; listener_id: string; listener_name: string; message_id: string;
  message_name: string | null;
};

const DELIVERY_REFS = `SELECT d.id, l.org_id, q.id AS queue_id, q.name AS queue_name, l.id AS listener_id, l.name AS listener_name,
    m.id AS message_id, m.name AS message_name
  FROM deliveries d JOIN listeners l ON l.seq = d.listener_seq JOIN queues q ON q.id = l.queue_id JOIN messages m ON m.seq = d.message_seq
  WHERE d.id = ANY($1::int8[])`;

/** Whether a completion is one the worker reports. */
export const reported = (c: Completion) => c.next.state === "missed" || c.next.state === "gone";

/** Runs `fn` in a transaction of `client`, with an Exec for event-writes.ts. */
export function inTransaction<T>(client: SQL, fn: (exec: Exec) => Promise<T>): Promise<T> {
  return client.begin((tx) => fn((text, params) => tx.unsafe(text, params) as unknown as Promise<any[]>)) as Promise<T>;
}

/**
 * The listeners a 410 among `items` will pause, locked until the commit: only those are reported disabled. The
 * lock leaves publishes alone (FOR KEY SHARE does not wait for it).
 */
export async function pausing(exec: Exec, items: Completion[]): Promise<Set<number>> {
  const seqs = items.filter((c) => c.next.state === "gone").map((c) => c.listenerSeq);
  if (seqs.length === 0) return new Set();
  const rows = await exec("SELECT seq FROM listeners WHERE seq = ANY($1::int8[]) AND enabled ORDER BY seq FOR NO KEY UPDATE", [seqs]);
  return new Set(rows.map((r) => Number(r.seq)));
}

/** The events of the completions that settled: each missed delivery, and each listener a 410 paused (once). */
export async function reportSettled(exec: Exec, items: Completion[], settled: boolean[], paused: Set<number>, now: number): Promise<void> {
  const shown = items.filter((c, i) => settled[i] && reported(c));
  if (shown.length === 0) return;
  const refs = new Map((await exec(DELIVERY_REFS, [shown.map((c) => c.id)]) as DeliveryRefs[]).map((r) => [Number(r.id), r]));
  for (const c of shown) {
    const r = refs.get(c.id);
    if (!r) continue; // deleted with its message or listener meanwhile
    if (c.next.state === "missed") await deliveryEvent(exec, r, "message_missed", now);
    else if (paused.delete(c.listenerSeq)) await deliveryEvent(exec, r, "listener_disabled", now, { status: c.record.statusCode });
  }
}

/** The events of deliveries that became missed while held (their ids). */
export async function reportMissed(exec: Exec, ids: number[], now: number): Promise<void> {
  if (ids.length === 0) return;
  for (const r of await exec(DELIVERY_REFS, [ids]) as DeliveryRefs[]) await deliveryEvent(exec, r, "message_missed", now);
}

/** A listener's liveness state changed. */
export async function reportStateChange(exec: Exec, seq: number, from: string, to: string, now: number): Promise<void> {
  const [r] = await exec(`SELECT l.org_id, q.id AS queue_id, q.name AS queue_name, l.id AS listener_id, l.name AS listener_name
    FROM listeners l JOIN queues q ON q.id = l.queue_id WHERE l.seq = $1`, [seq]);
  if (!r) return;
  await writeEvent(exec, {
    orgId: r.org_id, type: "listener_state_changed", apiKey: null, queue: { id: r.queue_id, name: r.queue_name },
    listener: { id: r.listener_id, name: r.listener_name }, message: null, portalSession: null, details: { from, to },
  }, now);
}

function deliveryEvent(exec: Exec, r: DeliveryRefs, type: string, now: number, details?: Record<string, unknown>) {
  return writeEvent(exec, {
    orgId: r.org_id, type, apiKey: null, queue: { id: r.queue_id, name: r.queue_name }, listener: { id: r.listener_id, name: r.listener_name },
    message: { id: r.message_id, name: r.message_name }, portalSession: null, details: details ?? null,
  }, now);
}
