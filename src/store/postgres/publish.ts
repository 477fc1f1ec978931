/**
 * Publishing on PostgreSQL: the publishes of one batch (writer.ts) are one statement, so one round trip and one
 * commit, which stores each message, its deliveries and its usage event:
 *
 *   input   one row per publish, from one JSON text;
 *   q       the queues they name, FOR SHARE: a schema change or a delete waits for this commit, and a publish
 *           that waited sees the queue as that change left it. A queue with a FIFO listener is locked FOR NO
 *           KEY UPDATE instead, so its publishes commit one at a time, in the order of their messages' seq: a
 *           FIFO line takes its oldest pending message as its head, and a message that committed before an
 *           earlier seq would be sent ahead of it;
 *   ok      the publishes whose queue exists in their organization with the schema they were checked against;
 *   m       their messages;
 *   l       the listeners of those queues, FOR KEY SHARE: a listener's delete waits for this commit, and then its
 *           trigger removes the deliveries written here (there is no foreign key to do it, schema.ts);
 *   stale   queues with a filtered listener the publisher did not judge at its current revision: their
 *           publishes are not written, and come back to be judged again (publish-filters.ts);
 *   d       one pending delivery, due now, per listener of the queue that the statement sees and whose filter, if
 *           any, took the message: the fan-out is part of the publish's commit, so a listener created after it
 *           never gets the message;
 *   k, e    each organization's event key moved once for its publishes (events.ts), and their events;
 *   idem    the Idempotency-Keys of the requests that carry one, committed with their messages (idempotency.ts);
 *   then    per publish whether its queue was found and whether it was stored, and a NOTIFY that wakes the
 *           delivery workers of every instance at the commit (none when no delivery was written).
 *
 * The SQLite store fans out later, in its delivery worker, to keep its single writer short; here the statement
 * writes the deliveries of the whole batch at once, and several instances write at the same time, so the fan-out
 * stays where the contract puts it (docs/postgres.md).
 */
import type { SQL } from "bun";
import { eventIdSql, randomEventTail } from "./events.ts";
import { lookupId } from "./text.ts";
import { WAKE_CHANNEL } from "./notifications.ts";
import { newId } from "../../lib/ids.ts";
import { FiltersChanged, notFound, SchemaChanged } from "../../lib/errors.ts";
import { routeOf, type FilterCache } from "./publish-filters.ts";
import type { Actor, PublishInput, PublishedMessage } from "../index.ts";

/**
 * The routing of a publish: the queue's filtered listeners as the publisher judged them (publish-filters.ts), each with the
 * revision of its filter, and those whose filter took the message. A listener whose filter the statement finds at
 * another revision (or a filtered one it was not told of) makes the publish come back FiltersChanged, unwritten.
 */
export type Routing = { considered: { seq: number; rev: number }[]; matched: number[] };
export type Publish = PublishInput & { orgId: string; queueId: string; now: number; actor: Actor };

/** Whether the queue row `queues` has a FIFO listener, whose line needs its messages committed in seq order. */
const HAS_FIFO = "EXISTS (SELECT 1 FROM listeners f WHERE f.queue_id = queues.id AND f.ordering = 'fifo')";

export const PUBLISH_SQL = `
WITH input AS (
  SELECT * FROM json_to_recordset($1::text::json)
    AS t(ord int, id text, org_id text, queue_id text, name text, data text, created_at int8, schema_id text,
      check_schema bool, key_id text, key_name text, event_tail text, idem_key text, idem_fingerprint text, matched jsonb,
      only_listener text)
),
considered AS (SELECT * FROM json_to_recordset($3::text::json) AS t(seq int8, rev int8)),
shared AS (
  SELECT id, org_id, name, schema_id FROM queues WHERE id IN (SELECT queue_id FROM input) AND NOT ${HAS_FIFO} ORDER BY id FOR SHARE
),
serial AS (
  SELECT id, org_id, name, schema_id FROM queues WHERE id IN (SELECT queue_id FROM input) AND ${HAS_FIFO} ORDER BY id FOR NO KEY UPDATE
),
q AS (SELECT * FROM shared UNION ALL SELECT * FROM serial),
l AS (
  SELECT seq, id, queue_id, filter IS NOT NULL AS filtered, filter_rev, ordering FROM listeners WHERE queue_id IN (SELECT id FROM q)
  ORDER BY seq FOR KEY SHARE
),
stale AS (
  SELECT DISTINCT queue_id FROM l
  WHERE filtered AND NOT EXISTS (SELECT 1 FROM considered c WHERE c.seq = l.seq AND c.rev = l.filter_rev)
),
ok AS (
  SELECT i.*, q.name AS queue_name, row_number() OVER (PARTITION BY i.org_id ORDER BY i.ord) AS n_in_org
  FROM input i JOIN q ON q.id = i.queue_id AND q.org_id = i.org_id
  WHERE (NOT i.check_schema OR q.schema_id IS NOT DISTINCT FROM i.schema_id) AND i.queue_id NOT IN (SELECT queue_id FROM stale)
    AND (i.only_listener IS NULL OR EXISTS (SELECT 1 FROM l WHERE l.id = i.only_listener AND l.queue_id = i.queue_id))
),
m AS (
  INSERT INTO messages (id, org_id, queue_id, name, data, created_at)
  SELECT id, org_id, queue_id, name, data, created_at FROM ok ORDER BY ord
  RETURNING seq, id, org_id, queue_id, created_at
),
d AS (
  INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at, line)
  SELECT m.org_id, m.seq, l.seq, 'pending', 0, m.created_at, m.created_at, m.created_at, CASE WHEN l.ordering = 'fifo' THEN 1 ELSE 0 END
  FROM m JOIN l ON l.queue_id = m.queue_id JOIN ok ON ok.id = m.id
  WHERE CASE WHEN ok.only_listener IS NOT NULL THEN l.id = ok.only_listener ELSE NOT l.filtered OR ok.matched @> to_jsonb(l.seq) END
  RETURNING 1
),
per_org AS (
  SELECT org_id, max(created_at) AS at, count(*) AS n FROM ok GROUP BY org_id
),
k AS (
  INSERT INTO event_keys AS k (org_id, stored_at, seq)
  SELECT org_id, at, n FROM per_org ORDER BY org_id
  ON CONFLICT (org_id) DO UPDATE SET stored_at = greatest(k.stored_at, excluded.stored_at), seq = k.seq + excluded.seq
  RETURNING org_id, stored_at, seq
),
idem AS (
  INSERT INTO idempotency_keys (key_hash, org_id, fingerprint, status, response, created_at)
  SELECT DISTINCT ON (idem_key) idem_key, org_id, idem_fingerprint, NULL::int, NULL::bytea, created_at
  FROM ok WHERE idem_key IS NOT NULL ORDER BY idem_key, ord
  ON CONFLICT (key_hash) DO UPDATE SET org_id = excluded.org_id, fingerprint = excluded.fingerprint, status = NULL,
    response = NULL, created_at = excluded.created_at
),
e AS (
  INSERT INTO events (id, org_id, type, stored_at, api_key_id, api_key_name, queue_id, queue_name, message_id, message_name)
  SELECT ${eventIdSql("k.seq - p.n + ok.n_in_org")} || ok.event_tail, ok.org_id, 'message_added', k.stored_at,
    ok.key_id, ok.key_name, ok.queue_id, ok.queue_name, ok.id, ok.name
  FROM ok JOIN k ON k.org_id = ok.org_id JOIN per_org p ON p.org_id = ok.org_id
)
SELECT i.ord, q.id IS NOT NULL AS found, ok.ord IS NOT NULL AS stored, i.queue_id IN (SELECT queue_id FROM stale) AS stale,
  i.only_listener IS NULL OR EXISTS (SELECT 1 FROM l WHERE l.id = i.only_listener AND l.queue_id = i.queue_id) AS listener_found,
  (SELECT count(*) FROM (SELECT pg_notify('${WAKE_CHANNEL}', $2) FROM (SELECT 1 FROM d LIMIT 1) x) n) AS notified
FROM input i LEFT JOIN q ON q.id = i.queue_id AND q.org_id = i.org_id LEFT JOIN ok ON ok.ord = i.ord
ORDER BY i.ord`;

type Outcome = { ord: number; found: boolean; stored: boolean; stale: boolean; listener_found: boolean };

/** The request's Idempotency-Key, unless an earlier write of the request recorded it (idempotency.ts). */
const unclaimed = (p: Publish) => {
  const claim = p.actor.idempotency;
  return claim && !claim.claimed ? { idem_key: claim.keyHash, idem_fingerprint: claim.fingerprint } : { idem_key: null, idem_fingerprint: null };
};

/**
 * Stores a batch of publishes in one statement; per publish its message, or the error that refused it. The batch
 * travels as one JSON text, which JSON.stringify makes natively, where array parameters are encoded (a literal
 * per column, every string quoted and escaped) in JavaScript.
 */
export async function publishBatch(client: SQL, batch: Publish[], instance: string, filters: FilterCache): Promise<(PublishedMessage | Error)[]> {
  const ids = batch.map((p) => newId("message", p.now));
  const routes = await Promise.all(batch.map(async (p) => routeOf(await filters.get(p.queueId), p)));
  const input = batch.map((p, i) => ({
    ord: i, id: ids[i], org_id: p.orgId, queue_id: lookupId(p.queueId), name: p.name, data: p.data, created_at: p.now,
    schema_id: p.schemaId ?? null, check_schema: p.schemaId !== undefined, key_id: p.actor.keyId, key_name: p.actor.keyName,
    ...unclaimed(p),
    event_tail: randomEventTail(),
    matched: routes[i]!.matched,
    only_listener: p.listenerId === undefined ? null : lookupId(p.listenerId),
  }));
  const considered = routes.flatMap((r) => r.considered);
  const rows: Outcome[] = await client.unsafe(PUBLISH_SQL, [JSON.stringify(input), instance, JSON.stringify(considered)]);
  return rows.map((r) => {
    const p = batch[r.ord]!;
    if (!r.found) return notFound("The queue");
    if (r.stale) return new FiltersChanged();
    if (!r.listener_found) return notFound("The listener");
    if (!r.stored) return new SchemaChanged();
    if (p.actor.idempotency) p.actor.idempotency.claimed = true;
    return { id: ids[r.ord]!, orgId: p.orgId, queueId: p.queueId, name: p.name, createdAt: p.now };
  });
}
