/**
 * The SQL of the delivery store, prepared once per connection. Every transition out of `sending` carries the
 * fencing guard `state = 'sending' AND lease_owner = $token` (see store/deliveries.ts). The indexes on deliveries
 * are partial (schema.ts); a query uses one only when its WHERE repeats the index's condition literally
 * (`state = 'pending'`, `state = 'sending'`). delivery-statements.test.ts checks every plan.
 */
import type { Database, Statement } from "bun:sqlite";
import { FANOUT_CHUNK, FANOUT_ROWS } from "../deliveries.ts";
import { CURSOR_SQL } from "./fanout.ts";
import { planOnce } from "./plan-once.ts";

/** Newest 100 kept: the oldest id drops out when a new one joins a full list. */
const MISSED_KEEP = 100;
/** A listener whose deliveries are held, not sent: down, or paused (l is the listener). */
const HOLDS = "(l.liveness_state = 'down' OR NOT l.enabled)";
/** A new delivery's place in its listener's line: 1 when the listener is FIFO. */
const LINE = "CASE WHEN l.ordering = 'fifo' THEN 1 ELSE 0 END";
/** The listener's settings the claim weighs (store/deliveries.ts holdOf). */
const PACE = "l.concurrency AS concurrency, l.rate_limit AS rateLimit, l.ordering = 'fifo' AS fifo, l.rate_next_at AS rateNextAt";


export const SQL = {
  // Fan-out (fanout.ts): the newest message against the cursor, read before taking the write lock.
  fanoutState: `SELECT ${CURSOR_SQL} AS cursor, (SELECT coalesce(max(seq), 0) FROM messages) AS top`,
  // The last message of the next slice past the cursor: its FANOUT_CHUNK-th message, or the one that holds its
  // FANOUT_ROWS-th delivery to a listener without a filter, whichever comes first, or else the newest. A
  // filtered listener's deliveries are counted as its filter takes them (fanout-filters.ts), not here: counting
  // every pair would cut a slice to a tenth for listeners that each take a tenth.
  // The count reads no further than the chunk, so a queue whose listeners all have filters is not a scan of
  // the whole backlog.
  fanoutUpTo: `WITH chunk(last) AS (
      SELECT coalesce((SELECT seq FROM messages WHERE seq > $cursor ORDER BY seq LIMIT 1 OFFSET ${FANOUT_CHUNK - 1}), $top))
    SELECT min(last, coalesce((SELECT m.seq FROM messages m
        JOIN listeners l INDEXED BY listeners_unfiltered ON l.queue_id = m.queue_id AND l.from_seq < m.seq AND l.filter IS NULL
        WHERE m.seq > $cursor AND m.seq <= (SELECT last FROM chunk) AND l.seq NOT IN (SELECT listener_seq FROM listener_filters)
        ORDER BY m.seq LIMIT 1 OFFSET ${FANOUT_ROWS - 1}), last)) AS upTo FROM chunk`,
  // Each message to the listeners its publish saw (created before it: from_seq below its seq), due at its publish;
  // listeners whose filter judges each message ($filtered) get theirs from fanOutPairs.
  fanOut: `INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at, line)
    SELECT m.org_id, m.seq, l.seq, 'pending', 0, m.created_at, m.created_at, m.created_at, ${LINE}
    FROM messages m JOIN listeners l INDEXED BY listeners_unfiltered ON l.queue_id = m.queue_id AND l.from_seq < m.seq AND l.filter IS NULL
    WHERE m.seq > $cursor AND m.seq <= $upTo AND l.seq NOT IN (SELECT value FROM json_each($filtered))
      AND (m.only_listener IS NULL OR m.only_listener = l.seq)`,
  // The pairs a filter took, each one integer: the message's seq past $cursor times $k, plus the listener's seq
  // (fanout-filters.ts). A message or listener deleted since is skipped.
  fanOutPairs: `INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at, line)
    SELECT m.org_id, m.seq, l.seq, 'pending', 0, m.created_at, m.created_at, m.created_at, ${LINE}
    FROM json_each($pairs) CROSS JOIN messages m ON m.seq = $cursor + json_each.value / $k CROSS JOIN listeners l ON l.seq = json_each.value % $k
    ORDER BY json_each.key`,
  // Listeners judged one message at a time: those with a filter, and those without one whose earlier filter
  // still judges messages waiting for their fan-out. The two sets are disjoint: UNION ALL, not a sort of every
  // row with its filter text to drop duplicates on every step.
  filteredListeners: `SELECT seq, queue_id AS queueId, from_seq AS fromSeq, filter FROM listeners INDEXED BY listeners_filtered
      WHERE filter IS NOT NULL
    UNION ALL SELECT seq, queue_id, from_seq, filter FROM listeners
      WHERE filter IS NULL AND seq IN (SELECT listener_seq FROM listener_filters)`,
  filterHistory: `SELECT listener_seq AS listenerSeq, upto_seq AS uptoSeq, filter FROM listener_filters
    WHERE upto_seq > $cursor ORDER BY listener_seq, upto_seq`,
  // One queue's messages of a slice, in seq order straight from the (queue_id, seq) index.
  sliceMessages: `SELECT seq, name, data, only_listener AS onlyListener FROM messages
    WHERE queue_id = $queue AND seq > $cursor AND seq <= $upTo ORDER BY seq`,
  pruneFilters: `DELETE FROM listener_filters WHERE upto_seq <= $upTo`,
  // What a usage event the worker records names (delivery-events.ts).
  deliveryRefs: `SELECT l.org_id AS orgId, q.id AS queueId, q.name AS queueName, l.id AS listenerId, l.name AS listenerName,
      m.id AS messageId, m.name AS messageName
    FROM deliveries d CROSS JOIN listeners l ON l.seq = d.listener_seq CROSS JOIN queues q ON q.id = l.queue_id
      CROSS JOIN messages m ON m.seq = d.message_seq
    WHERE d.id = $id`,
  listenerRefs: `SELECT l.org_id AS orgId, q.id AS queueId, q.name AS queueName, l.id AS listenerId, l.name AS listenerName,
      l.liveness_state AS state
    FROM listeners l CROSS JOIN queues q ON q.id = l.queue_id WHERE l.seq = $seq`,
  advanceFanout: `INSERT INTO fanout (id, message_seq) VALUES (1, $upTo)
    ON CONFLICT (id) DO UPDATE SET message_seq = excluded.message_seq`,
  // CROSS JOIN fixes the join order (deliveries by rowid first) whatever the table statistics say.
  // A unary + keeps SQLite from scanning an index on `state` where the rowid already names the row.
  // Oldest due first, one window at a time: ($at, $id) is where the previous window ended (-1, 0 for the first).
  // Held rows have next_attempt_at NULL and so sit outside the range; FIFO lines are asked apart (fifoDue).
  dueWindow: `SELECT d.id AS id, d.listener_seq AS listenerSeq, d.next_attempt_at AS at, ${HOLDS} AS down, ${PACE}
    FROM deliveries d JOIN listeners l ON l.seq = d.listener_seq
    WHERE d.state = 'pending' AND d.line = 0 AND d.next_attempt_at <= $now AND d.next_attempt_at >= $at
      AND (d.next_attempt_at > $at OR d.id > $id)
    ORDER BY d.next_attempt_at, d.id LIMIT $window`,
  listenersWithDue: `SELECT l.seq AS seq, ${HOLDS} AS down, ${PACE} FROM listeners l
    WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.listener_seq = l.seq AND d.state = 'pending' AND d.next_attempt_at <= $now)`,
  // Listeners with a FIFO line and a row of it due: each is asked for its head (or, down or paused, for rows to hold).
  fifoDue: `SELECT l.seq AS seq, ${HOLDS} AS down, ${PACE} FROM listeners l INDEXED BY listeners_fifo
    WHERE l.ordering = 'fifo' AND EXISTS (SELECT 1 FROM deliveries d WHERE d.listener_seq = l.seq AND d.state = 'pending'
      AND d.next_attempt_at <= $now)`,
  dueOfListener: `SELECT id FROM deliveries WHERE listener_seq = $seq AND state = 'pending' AND next_attempt_at <= $now
    ORDER BY next_attempt_at, id LIMIT $n`,
  // The rows were chosen outside this transaction: only those still pending and due are leased.
  // A FIFO listener's head, when it may start now: the oldest pending of its line, due, with none of the line in
  // flight (deliveries_line: each one step down; named, since deliveries_listener gives the order too, through every
  // final row of the listener's history). The claim asks once per FIFO listener it meets (claim-choice.ts).
  fifoHead: `SELECT id FROM deliveries WHERE listener_seq = $seq AND next_attempt_at <= $now
    AND message_seq = (SELECT min(h.message_seq) FROM deliveries h INDEXED BY deliveries_line WHERE h.listener_seq = $seq AND h.line = 1 AND h.state = 'pending')
    AND NOT EXISTS (SELECT 1 FROM deliveries s WHERE s.listener_seq = $seq AND s.line = 1 AND s.state = 'sending')`,
  // The rate-limited listeners among the rows a claim leased, each with how many: their start slots (pace.ts).
  leasedPace: `SELECT d.listener_seq AS seq, count(*) AS n, l.rate_limit AS rateLimit, l.rate_next_at AS nextAt
    FROM deliveries d CROSS JOIN listeners l ON l.seq = d.listener_seq
    WHERE d.id IN (SELECT value FROM json_each($ids)) AND d.lease_owner = $token AND l.rate_limit IS NOT NULL GROUP BY d.listener_seq`,
  reserveSlots: `UPDATE listeners SET rate_next_at = $next WHERE seq = $seq`,
  lease: `UPDATE deliveries SET state = 'sending', lease_owner = $token, lease_expires_at = $expires, updated_at = $now
    WHERE id IN (SELECT value FROM json_each($ids)) AND +state = 'pending' AND +next_attempt_at <= $now`,
  // In no particular order: the caller puts the rows back in the order they were chosen (an ORDER BY here
  // sorted every row with its message data in a temporary b-tree). Each listener's own fields come once per
  // claim (leasedListeners), not once per row: most claims are many rows of few listeners; so does each
  // message's data (leasedData), which a message's rows to several listeners would each carry otherwise.
  leasedDetails: `SELECT d.id AS id, d.attempt AS attempt, d.listener_seq AS listenerSeq,
      m.seq AS messageSeq, m.id AS messageId, m.name AS messageName, m.created_at AS createdAt
    FROM deliveries d CROSS JOIN messages m ON m.seq = d.message_seq
    WHERE d.id IN (SELECT value FROM json_each($ids)) AND d.lease_owner = $token`,
  leasedData: `SELECT seq, data FROM messages WHERE seq IN (SELECT value FROM json_each($seqs))`,
  // A listener's queue is its messages' queue: deliveries are made for the listeners of the queue published to.
  leasedListeners: `SELECT l.seq AS seq, l.id AS id, l.org_id AS orgId, l.notify_url AS notifyUrl, l.secret AS secret,
      l.previous_secret AS previousSecret, l.previous_secret_until AS previousSecretUntil,
      l.liveness_state AS livenessState, l.enabled AS enabled, q.id AS queueId, q.name AS queueName, l.headers AS headers, ${PACE}
    FROM listeners l CROSS JOIN queues q ON q.id = l.queue_id
    WHERE l.seq IN (SELECT value FROM json_each($seqs))`,
  // A FIFO head's retry is not here: the worker wakes for it itself (loop.ts).
  nextDue: `SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending' AND line = 0 AND next_attempt_at > $now`,
  // An acknowledging attempt is kept on the row ($ackedAt …; NULL for any other): acked-attempts.ts.
  settle: `UPDATE deliveries SET state = $state, attempt = $attempt, next_attempt_at = $nextAt, lease_owner = NULL,
      lease_expires_at = NULL, held_since = NULL, last_status = $status, last_error = $error, updated_at = $now,
      acked_at = $ackedAt, acked_ms = $ackedMs, acked_response = $ackedResponse
    WHERE id = $id AND state = 'sending' AND lease_owner = $token`,
  insertAttempt: `INSERT INTO attempts (delivery_id, attempt, cycle, attempted_at, status_code, duration_ms, error, response)
    VALUES ($id, $attempt, (SELECT cycle FROM deliveries WHERE id = $id), $at, $status, $duration, $error, $response)`,
  // The receiver answered 410 Gone: the attempt counts, the delivery waits as for a paused listener.
  settleGone: `UPDATE deliveries SET state = 'pending', attempt = $attempt, next_attempt_at = NULL, held_since = coalesce(held_since, $now),
      lease_owner = NULL, lease_expires_at = NULL, last_status = $status, last_error = $error, updated_at = $now
    WHERE id = $id AND state = 'sending' AND lease_owner = $token`,
  pauseListener: `UPDATE listeners SET enabled = 0 WHERE seq = $seq AND enabled`,
  countAcknowledged: `UPDATE listeners SET acknowledged_count = acknowledged_count + $n WHERE seq = $seq`,
  countMissed: `UPDATE listeners SET missed_count = missed_count + 1,
      missed = json_insert(CASE WHEN json_array_length(missed) >= ${MISSED_KEEP} THEN json_remove(missed, '$[0]') ELSE missed END,
        '$[#]', $messageId)
    WHERE seq = $seq`,
  // The listener may have come back between the claim and this statement; then the row is simply due now.
  hold: `UPDATE deliveries SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated_at = $now,
      next_attempt_at = CASE WHEN ${HOLDS} THEN NULL ELSE $now END,
      held_since = CASE WHEN ${HOLDS} THEN coalesce(held_since, $now) ELSE held_since END
    FROM listeners AS l
    WHERE deliveries.id = $id AND +deliveries.state = 'sending' AND deliveries.lease_owner = $token AND l.seq = deliveries.listener_seq`,
  release: `UPDATE deliveries SET state = 'pending', next_attempt_at = $now, lease_owner = NULL, lease_expires_at = NULL, updated_at = $now
    WHERE id = $id AND state = 'sending' AND lease_owner = $token`,
  releaseOwner: `UPDATE deliveries SET state = 'pending', next_attempt_at = $now, lease_owner = NULL, lease_expires_at = NULL, updated_at = $now
    WHERE state = 'sending' AND substr(lease_owner, 1, length($prefix)) = $prefix`,
  releaseAll: `UPDATE deliveries SET state = 'pending', next_attempt_at = $now, lease_owner = NULL, lease_expires_at = NULL, updated_at = $now
    WHERE state = 'sending'`,
  rescue: `UPDATE deliveries SET state = 'pending', next_attempt_at = $now, lease_owner = NULL, lease_expires_at = NULL, updated_at = $now
    WHERE state = 'sending' AND lease_expires_at <= $now`,
  heldTooLong: `SELECT d.id AS id, d.listener_seq AS listenerSeq, m.id AS messageId, d.org_id AS orgId, l.id AS listenerId,
      m.queue_id AS queueId
    FROM deliveries d INDEXED BY deliveries_held JOIN messages m ON m.seq = d.message_seq JOIN listeners l ON l.seq = d.listener_seq
    WHERE d.held_since IS NOT NULL AND d.held_since <= $cutoff AND d.state = 'pending' AND d.next_attempt_at IS NULL
    LIMIT 1000`,
  missHeld: `UPDATE deliveries SET state = 'missed', held_since = NULL, last_error = $error, updated_at = $now
    WHERE id = $id AND state = 'pending' AND next_attempt_at IS NULL`,
  claimProbes: `UPDATE listeners SET next_probe_at = $hold
    WHERE seq IN (SELECT seq FROM listeners WHERE next_probe_at <= $now ORDER BY next_probe_at LIMIT $limit)
    RETURNING seq, id, queue_id AS queueId, liveness_url AS livenessUrl, liveness_state AS state, failures_in_row AS failuresInRow,
      headers`,
  recordProbe: `UPDATE listeners SET liveness_state = $state, failures_in_row = $failures,
      success_count = success_count + $ok, failure_count = failure_count + 1 - $ok, next_probe_at = $next,
      down_since = CASE WHEN $state = 'down' THEN coalesce(down_since, $now) ELSE NULL END
    WHERE seq = $seq`,
  // In chunks: resuming a million held rows in one transaction would hold the write lock for seconds. A paused
  // listener's rows stay held, whatever its probes say.
  resume: `UPDATE deliveries SET next_attempt_at = $now, updated_at = $now
    WHERE id IN (SELECT id FROM deliveries WHERE listener_seq = $seq AND state = 'pending' AND next_attempt_at IS NULL
      AND (SELECT enabled FROM listeners WHERE seq = $seq) LIMIT $limit)`,
  // Retention: the oldest messages made before $before (ids start with their time) whose deliveries are all
  // final, fanned out already; deleting one cascades to its deliveries and their attempts.
  deleteExpired: `DELETE FROM messages WHERE seq IN (SELECT m.seq FROM messages m
    WHERE m.id < $before AND m.seq <= ${CURSOR_SQL}
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.state IN ('pending', 'sending'))
    ORDER BY m.id LIMIT $limit)`,
} as const;

export type Statements = { -readonly [K in keyof typeof SQL]: Statement };

export function prepareStatements(db: Database): Statements {
  const out = {} as Statements;
  for (const [name, sql] of Object.entries(SQL)) out[name as keyof typeof SQL] = db.prepare(planOnce(sql));
  return out;
}
