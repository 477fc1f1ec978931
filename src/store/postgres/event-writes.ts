/**
 * Writing a usage event on PostgreSQL, for the API's writes (shared.ts recordEvent, through Drizzle) and the
 * delivery worker's (worker-events.ts, on its bare client) alike: both hand in a way to run one statement in
 * their transaction. The event is keyed under its organization's row lock (events.ts), and every type but a
 * publish's is also published to the organization's events queue (docs/api.md, "Operational messages"): a
 * message, and its deliveries to the listeners whose filters take it, in the same transaction.
 */
import { sql, type SQL } from "drizzle-orm";
import { compileFilter, matches, subjectOf } from "../../lib/filter.ts";
import { newId } from "../../lib/ids.ts";
import { mirrored, usageEventView } from "../event-view.ts";
import type { UsageEvent } from "../index.ts";
import { eventIdSql, randomEventTail } from "./events.ts";
import { WAKE_CHANNEL } from "./notifications.ts";
import type { PgTx } from "./client.ts";

/** Runs one statement with positional parameters ($1, $2, …) in the caller's transaction. */
export type Exec = (text: string, params: unknown[]) => Promise<any[]>;

/** A Drizzle transaction as an Exec: the text is split at its parameters, each passed as a parameter again. */
export function drizzleExec(tx: PgTx): Exec {
  return async (text, params) => {
    const chunks: SQL[] = [];
    let last = 0;
    for (const m of text.matchAll(/\$(\d+)/g)) {
      // sql.param: an array stays one parameter (a PostgreSQL array), where a bare one would become a list.
      chunks.push(sql.raw(text.slice(last, m.index)), sql`${sql.param(params[Number(m[1]) - 1])}`);
      last = m.index! + m[0].length;
    }
    chunks.push(sql.raw(text.slice(last)));
    const result = await tx.execute(sql.join(chunks));
    return result as unknown as any[];
  };
}

const INSERT_EVENT = `
WITH k AS (
  INSERT INTO event_keys AS k (org_id, stored_at, seq) VALUES ($1, $2, 1)
  ON CONFLICT (org_id) DO UPDATE SET stored_at = greatest(k.stored_at, excluded.stored_at), seq = k.seq + 1
  RETURNING stored_at, seq)
INSERT INTO events (id, org_id, type, stored_at, api_key_id, api_key_name, queue_id, queue_name, listener_id,
  listener_name, message_id, message_name, portal_session_id, details)
SELECT ${eventIdSql("k.seq")} || $3, $1, $4, k.stored_at, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 FROM k
RETURNING id, stored_at`;

export type NewEvent = Omit<UsageEvent, "id" | "storedAt">;

/**
 * Stores the event (call it last in the transaction: it holds the organization's key row until the commit). The
 * events queue and its listeners are locked before the key row, so a transaction holding that row waits for
 * nothing else.
 */
export async function writeEvent(exec: Exec, e: NewEvent, now: number): Promise<UsageEvent> {
  const mirror = e.type === "message_added" ? null : await eventsQueue(exec, e);
  const [row] = await exec(INSERT_EVENT, [
    e.orgId, now, randomEventTail(), e.type, e.apiKey?.id ?? null, e.apiKey?.name ?? null, e.queue?.id ?? null, e.queue?.name ?? null,
    e.listener?.id ?? null, e.listener?.name ?? null, e.message?.id ?? null, e.message?.name ?? null, e.portalSession?.id ?? null,
    e.details ? JSON.stringify(e.details) : null,
  ]);
  const event = { ...e, id: row.id as string, storedAt: Number(row.stored_at) };
  if (mirror) await publishEvent(exec, event, mirror, now);
  return event;
}

type Mirror = { queueId: string; listeners: { seq: number; filter: string | null; fifo: boolean }[] };

/** The organization's events queue, locked as a publish locks it (publish.ts), when this event goes there. */
async function eventsQueue(exec: Exec, e: NewEvent): Promise<Mirror | null> {
  const [org] = await exec("SELECT events_queue_id FROM orgs WHERE id = $1", [e.orgId]);
  const queueId: string | null = org?.events_queue_id ?? null;
  if (!queueId || !mirrored(e.type, e.queue?.id ?? null, queueId)) return null;
  const [queue] = await exec("SELECT id FROM queues WHERE id = $1 AND org_id = $2 FOR SHARE", [queueId, e.orgId]);
  if (!queue) return null;
  const rows = await exec("SELECT seq, filter, ordering FROM listeners WHERE queue_id = $1 ORDER BY seq FOR KEY SHARE", [queueId]);
  return { queueId, listeners: rows.map((r) => ({ seq: Number(r.seq), filter: r.filter, fifo: r.ordering === "fifo" })) };
}

/** The event's message, with a delivery to each listener whose filter takes it; wakes every instance's worker. */
async function publishEvent(exec: Exec, event: UsageEvent, mirror: Mirror, now: number): Promise<void> {
  const data = usageEventView(event);
  const [message] = await exec(
    "INSERT INTO messages (id, org_id, queue_id, name, data, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
    [newId("message", now), event.orgId, mirror.queueId, event.type, JSON.stringify(data), now],
  );
  const subject = subjectOf(event.type, data);
  const takers = mirror.listeners.filter((l) => {
    if (l.filter === null) return true;
    const compiled = compileFilter(JSON.parse(l.filter));
    return compiled.ok && matches(compiled.filter, subject);
  });
  if (takers.length === 0) return;
  await exec(`INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at, line)
    SELECT $1, $2, t.seq, 'pending', 0, $3, $3, $3, t.line FROM unnest($4::int8[], $5::int[]) AS t(seq, line)`,
    [event.orgId, message!.seq, now, takers.map((l) => l.seq), takers.map((l) => (l.fifo ? 1 : 0))]);
  await exec(`SELECT pg_notify('${WAKE_CHANNEL}', '')`, []);
}
