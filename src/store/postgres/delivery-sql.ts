/**
 * The SQL of the PostgreSQL delivery store (deliveries.ts). Each transition is one statement, so each is atomic
 * without a transaction around it and costs one round trip. Every transition out of `sending` carries the fencing
 * guard `state = 'sending' AND lease_owner = <token>` (store/deliveries.ts). Rows are locked with
 * `FOR UPDATE SKIP LOCKED` where several instances look for work at once, so each takes rows the others are not
 * taking instead of waiting for them. The partial indexes (schema.ts) are used only where a WHERE repeats their
 * condition (`state = 'pending'`, `state = 'sending'`).
 */

import { RATE_HOLD_MS } from "../deliveries.ts";

/** A listener whose deliveries are held, not sent: down, or paused (l is the listener). */
const HOLDS = "(l.liveness_state = 'down' OR NOT l.enabled)";

/** store/deliveries.ts holdOf, in SQL: the rows of listener l a worker may hold. */
export const HOLD_SQL = `CASE WHEN l.ordering = 'fifo' THEN 1 ELSE least(coalesce(l.concurrency * $hold_per_request, $per_listener),
  CASE WHEN l.rate_limit IS NULL THEN 1000000000 ELSE greatest(1, ceil(l.rate_limit * ${RATE_HOLD_MS} / 1000.0))::int END) END`;

/** store/deliveries.ts slotsLeft, in SQL: the rows of rate-limited listener l a claim at $now may still take. */
const SLOTS_LEFT_SQL = `CASE WHEN l.rate_limit IS NULL THEN 1000000000
  ELSE greatest(0, floor(($now + ${RATE_HOLD_MS} - greatest($now, l.rate_next_at)) * l.rate_limit / 1000.0))::int END`;

/** The oldest pending row of listener `seq`'s FIFO line, and whether a row of that line is in flight (deliveries_line). */
const lineHead = (seq: string) => `(SELECT d2.id FROM deliveries d2 WHERE d2.listener_seq = ${seq} AND d2.message_seq = (SELECT min(h.message_seq)
  FROM deliveries h WHERE h.listener_seq = ${seq} AND h.line = 1 AND h.state = 'pending'))`;
const lineBusy = (seq: string) => `EXISTS (SELECT 1 FROM deliveries s WHERE s.listener_seq = ${seq} AND s.line = 1 AND s.state = 'sending')`;
/** Whether pending row `c` may start: for a FIFO listener, only its head, and only while none of its line is in flight. */
const TAKEABLE = `CASE WHEN l.ordering = 'fifo' AND NOT ${HOLDS} THEN c.id = ${lineHead("c.listener_seq")} AND NOT ${lineBusy("c.listener_seq")}
  ELSE true END`;

/** Newest 100 kept: `ids` (a jsonb array, oldest first) appended to `missed`, the oldest dropping out. */
const MISSED_KEEP = 100;
const appendMissed = (ids: string) => `(SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb) FROM (
    SELECT e, n FROM jsonb_array_elements(missed || ${ids}) WITH ORDINALITY AS x(e, n) ORDER BY n DESC LIMIT ${MISSED_KEEP}) kept)`;

/** The fields a claimed row is sent with, of the rows in `leased` (id, due, attempt, listener_seq, message_seq). */
const DETAILS = `SELECT ld.id, ld.due, ld.attempt, ld.listener_seq, m.id AS message_id, m.name AS message_name, m.data,
      m.created_at, l.id AS listener_id, l.org_id, l.notify_url, l.secret, l.previous_secret, l.previous_secret_until,
      ${HOLDS} AS held, q.id AS queue_id, q.name AS queue_name, l.headers, l.concurrency, l.rate_limit,
      l.ordering = 'fifo' AS fifo
    FROM leased ld JOIN messages m ON m.seq = ld.message_seq JOIN listeners l ON l.seq = ld.listener_seq
      JOIN queues q ON q.id = l.queue_id`;

/** Leases `chosen` (ids) under $token and reads back what to send; `seen` and `next_due` come from the caller's CTEs. */
const LEASE = `leased AS (
    UPDATE deliveries d SET state = 'sending', lease_owner = $token, lease_expires_at = $expires, updated_at = $now
    FROM chosen c WHERE d.id = c.id AND d.state = 'pending'
    RETURNING d.id, d.next_attempt_at AS due, d.attempt, d.listener_seq, d.message_seq)`;

/** Named parameters ($name) in the order they are passed. */
export function positional(text: string, names: readonly string[]): string {
  return text.replace(/\$([a-z_]+)/g, (_, name: string) => {
    const i = names.indexOf(name);
    if (i < 0) throw new Error(`no parameter $${name}`);
    return `$${i + 1}`;
  });
}

/**
 * A statement's values in the order of its parameter names, from an object keyed by those names: a missing or
 * misspelled name does not compile, so the order of the array can never drift from the statement's.
 */
export function bind<const N extends readonly string[]>(names: N, values: { [K in N[number]]: unknown }): unknown[] {
  return names.map((name: N[number]) => values[name]);
}

export const CLAIM_PARAMS = ["busy_seqs", "busy_counts", "now", "window", "per_listener", "hold_per_request", "limit", "token", "expires", "want_next"] as const;

/**
 * The due rows, oldest first, read one window at a time; each listener's rows past its cap (counting what the
 * caller holds) are left, rows of down listeners are taken uncapped (they are held, not sent). Only the rows
 * chosen are locked, skipping those another claim is taking: a row lock is a write to the row, and locking the
 * whole window to lease the few rows a capped listener can take cost more than the leases. `seen` tells the caller
 * whether the window was full, `next_due` the earliest future due time when asked.
 */
const CLAIM_CTES = `busy AS (SELECT * FROM unnest($busy_seqs::int8[], $busy_counts::int[]) AS b(seq, n)),
cand AS (
  SELECT id, listener_seq, next_attempt_at FROM deliveries
  WHERE state = 'pending' AND next_attempt_at <= $now
  ORDER BY next_attempt_at, id LIMIT $window
),
judged AS (
  SELECT c.id, c.listener_seq, c.next_attempt_at, ${HOLDS} AS down, ${TAKEABLE} AS takeable, ${HOLD_SQL} AS hold,
    ${SLOTS_LEFT_SQL} AS slots
  FROM cand c JOIN listeners l ON l.seq = c.listener_seq
),
ranked AS (
  SELECT j.*, row_number() OVER (PARTITION BY j.listener_seq, j.takeable ORDER BY j.next_attempt_at, j.id) + coalesce(b.n, 0) AS nth
  FROM judged j LEFT JOIN busy b ON b.seq = j.listener_seq
),
picked AS (
  SELECT r.id FROM ranked r LEFT JOIN busy b ON b.seq = r.listener_seq
  WHERE r.down OR (r.takeable AND r.nth <= least(r.hold, coalesce(b.n, 0) + r.slots))
  ORDER BY r.next_attempt_at, r.id LIMIT $limit
),
chosen AS (
  SELECT id FROM deliveries WHERE id = ANY(ARRAY(SELECT id FROM picked)) AND state = 'pending' AND next_attempt_at <= $now
  FOR UPDATE SKIP LOCKED
),
${LEASE}`;
/** The claim's answer: `seen`, `next_due`, then one row per leased delivery (or one row of nulls). */
const CLAIMED = `(SELECT count(*) FROM cand) AS seen,
  CASE WHEN $want_next::bool THEN (SELECT min(next_attempt_at) FROM deliveries WHERE state = 'pending' AND next_attempt_at > $now) END AS next_due,
  x.*
FROM (SELECT 1) one LEFT JOIN (${DETAILS}) x ON true`;

export const CLAIM = positional(`WITH ${CLAIM_CTES} SELECT ${CLAIMED}`, CLAIM_PARAMS);

export const FAIR_CLAIM_PARAMS = ["busy_seqs", "busy_counts", "now", "room", "per_listener", "hold_per_request", "token", "expires"] as const;

/**
 * After a window full of capped listeners' rows: each listener with due rows is asked for what it can still take,
 * so one slow listener with a large backlog cannot hold back the others; a FIFO listener for its head alone.
 */
export const FAIR_CLAIM = positional(`
WITH busy AS (SELECT * FROM unnest($busy_seqs::int8[], $busy_counts::int[]) AS b(seq, n)),
room AS (
  SELECT l.seq, ${HOLDS} AS down, l.ordering = 'fifo' AS fifo,
    CASE WHEN ${HOLDS} THEN $room ELSE least($room, ${HOLD_SQL} - coalesce(b.n, 0), ${SLOTS_LEFT_SQL}) END AS n
  FROM listeners l LEFT JOIN busy b ON b.seq = l.seq
  WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.listener_seq = l.seq AND d.state = 'pending' AND d.next_attempt_at <= $now)
),
cand AS (
  SELECT x.id, x.next_attempt_at FROM room r CROSS JOIN LATERAL (
    SELECT id, next_attempt_at FROM deliveries d
    WHERE d.listener_seq = r.seq AND d.state = 'pending' AND d.next_attempt_at <= $now AND (r.down OR NOT r.fifo)
    ORDER BY next_attempt_at, id LIMIT greatest(r.n, 0)
    FOR UPDATE SKIP LOCKED) x
  UNION ALL
  SELECT h.id, h.next_attempt_at FROM room r CROSS JOIN LATERAL (
    SELECT d.id, d.next_attempt_at FROM deliveries d WHERE d.id = ${lineHead("r.seq")} AND d.next_attempt_at <= $now
      AND NOT ${lineBusy("r.seq")}
    FOR UPDATE SKIP LOCKED) h
  WHERE r.fifo AND NOT r.down AND r.n > 0
),
chosen AS (SELECT id FROM cand ORDER BY next_attempt_at, id LIMIT $room),
${LEASE}
SELECT 0 AS seen, NULL::int8 AS next_due, x.* FROM (SELECT 1) one LEFT JOIN (${DETAILS}) x ON true`, FAIR_CLAIM_PARAMS);

/**
 * Start slots for the rate-limited listeners among the rows a claim leased (store/sqlite/pace.ts says why): each
 * gets `n` slots from its rate_next_at (or now), which moves past them. Apart from the claim, since the settle
 * in the same statement may update the same listener rows, which one statement cannot do twice.
 */
export const RESERVE_SLOTS_PARAMS = ["seqs", "counts", "now"] as const;
export const RESERVE_SLOTS = positional(`
UPDATE listeners l SET rate_next_at = greatest(l.rate_next_at, $now) + ceil(c.n * 1000.0 / l.rate_limit)::int8
FROM unnest($seqs::int8[], $counts::int[]) AS c(seq, n)
WHERE l.seq = c.seq AND l.rate_limit IS NOT NULL
RETURNING l.seq, l.rate_next_at - ceil(c.n * 1000.0 / l.rate_limit)::int8 AS rate_from, l.rate_limit`, RESERVE_SLOTS_PARAMS);

export const SETTLE_PARAMS = ["input", "now"] as const;

/**
 * Settles completions, records their attempts and counts them on their listeners, in one statement; the
 * completions come as one JSON text (publish.ts says why). A 410 Gone (`gone`) holds its delivery and pauses its
 * listener. A delivery named twice is settled by its first completion only; a fenced-out one (lease lost, row
 * deleted) changes nothing. Returns the input positions that settled.
 */
const SETTLE_CTES = `input AS (
  SELECT * FROM json_to_recordset($input::text::json)
    AS t(ord int, id int8, token text, state text, attempt int, next_at int8, status int, error text, attempted_at int8,
      duration int, response text, listener_seq int8, message_id text)
),
first AS (SELECT DISTINCT ON (id) * FROM input ORDER BY id, ord),
settled AS (
  UPDATE deliveries d SET state = CASE WHEN i.state = 'gone' THEN 'pending' ELSE i.state END, attempt = i.attempt,
    next_attempt_at = CASE WHEN i.state = 'gone' THEN NULL ELSE i.next_at END,
    held_since = CASE WHEN i.state = 'gone' THEN coalesce(d.held_since, $now) END,
    lease_owner = NULL, lease_expires_at = NULL, last_status = i.status, last_error = i.error, updated_at = $now
  FROM first i WHERE d.id = i.id AND d.state = 'sending' AND d.lease_owner = i.token
  RETURNING i.ord, d.cycle
),
done AS (SELECT i.*, s.cycle FROM input i JOIN settled s ON s.ord = i.ord),
recorded AS (
  INSERT INTO attempts (delivery_id, attempt, cycle, attempted_at, status_code, duration_ms, error, response)
  SELECT id, attempt, cycle, attempted_at, status, duration, error, response FROM done ORDER BY ord
),
counts AS (
  SELECT listener_seq, count(*) FILTER (WHERE state = 'acknowledged') AS acked, count(*) FILTER (WHERE state = 'missed') AS missed_n,
    coalesce(jsonb_agg(to_jsonb(message_id) ORDER BY ord) FILTER (WHERE state = 'missed'), '[]'::jsonb) AS missed_ids,
    bool_or(state = 'gone') AS gone
  FROM done GROUP BY listener_seq
),
counted AS (
  UPDATE listeners SET acknowledged_count = acknowledged_count + c.acked, missed_count = missed_count + c.missed_n,
    missed = CASE WHEN c.missed_n = 0 THEN missed ELSE ${appendMissed("c.missed_ids")} END,
    enabled = enabled AND NOT c.gone
  FROM counts c WHERE seq = c.listener_seq AND (c.acked > 0 OR c.missed_n > 0 OR c.gone)
)`;

export const SETTLE = positional(`WITH ${SETTLE_CTES} SELECT ord FROM settled`, SETTLE_PARAMS);

export const COMPLETE_AND_CLAIM_PARAMS = ["input", "now", "busy_seqs", "busy_counts", "window", "per_listener", "hold_per_request", "limit", "token", "expires", "want_next"] as const;

/**
 * A worker's step in one statement and one round trip: the completions settled (SETTLE), then the claim (CLAIM),
 * its rows carrying the positions that settled. They cannot meet: a row being settled is `sending`, and the claim
 * takes `pending` ones; the claim reads the snapshot from before the settlements, so a retry they schedule is a
 * later step's.
 */
export const COMPLETE_AND_CLAIM = positional(`WITH ${SETTLE_CTES}, ${CLAIM_CTES}
SELECT (SELECT coalesce(array_agg(ord), '{}') FROM settled) AS settled, ${CLAIMED}`, COMPLETE_AND_CLAIM_PARAMS);

/** The listener may have come back between the claim and this statement; then the row is simply due now. */
export const HOLD = `
UPDATE deliveries d SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated_at = $3,
  next_attempt_at = CASE WHEN ${HOLDS} THEN NULL ELSE $3 END,
  held_since = CASE WHEN ${HOLDS} THEN coalesce(d.held_since, $3) ELSE d.held_since END
FROM unnest($1::int8[], $2::text[]) AS i(id, token), listeners l
WHERE d.id = i.id AND d.state = 'sending' AND d.lease_owner = i.token AND l.seq = d.listener_seq
RETURNING d.id`;

const BACK_TO_PENDING = `UPDATE deliveries d SET state = 'pending', next_attempt_at = $now, lease_owner = NULL, lease_expires_at = NULL, updated_at = $now`;

export const RELEASE = positional(`${BACK_TO_PENDING}
FROM unnest($ids::int8[], $tokens::text[]) AS i(id, token)
WHERE d.id = i.id AND d.state = 'sending' AND d.lease_owner = i.token`, ["ids", "tokens", "now"]);

export const RELEASE_OWNER = positional(`${BACK_TO_PENDING}
WHERE d.state = 'sending' AND starts_with(d.lease_owner, $prefix)`, ["prefix", "now"]);

/** Only for a process that knows no other one delivers from the database; fanout's servers never call it here. */
export const RELEASE_ALL = positional(`${BACK_TO_PENDING}
WHERE d.state = 'sending'`, ["now"]);

export const RESCUE = positional(`${BACK_TO_PENDING}
WHERE d.state = 'sending' AND d.lease_expires_at <= $now`, ["now"]);

/** At most 1,000 a statement; the caller repeats while a full batch came back. */
export const EXPIRE_HELD_BATCH = 1_000;
export const EXPIRE_HELD = positional(`
WITH held AS (
  SELECT d.id, d.listener_seq, d.org_id, m.id AS message_id, m.queue_id, l.id AS listener_id
  FROM deliveries d JOIN messages m ON m.seq = d.message_seq JOIN listeners l ON l.seq = d.listener_seq
  WHERE d.held_since IS NOT NULL AND d.held_since <= $cutoff AND d.state = 'pending' AND d.next_attempt_at IS NULL
  ORDER BY d.held_since, d.id LIMIT ${EXPIRE_HELD_BATCH}
  FOR UPDATE OF d SKIP LOCKED
),
missed_now AS (
  UPDATE deliveries d SET state = 'missed', held_since = NULL, last_error = $error, updated_at = $now
  FROM held h WHERE d.id = h.id RETURNING d.id, h.listener_seq, h.message_id, h.org_id, h.queue_id, h.listener_id
),
counts AS (
  SELECT listener_seq, count(*) AS n, jsonb_agg(to_jsonb(message_id) ORDER BY id) AS ids FROM missed_now GROUP BY listener_seq
),
counted AS (
  UPDATE listeners SET missed_count = missed_count + c.n, missed = ${appendMissed("c.ids")}
  FROM counts c WHERE seq = c.listener_seq
)
SELECT id, org_id, listener_id, queue_id, message_id FROM missed_now ORDER BY id`, ["cutoff", "error", "now"]);

export const CLAIM_PROBES = positional(`
UPDATE listeners SET next_probe_at = $hold
WHERE seq IN (SELECT seq FROM listeners WHERE next_probe_at <= $now ORDER BY next_probe_at LIMIT $limit FOR UPDATE SKIP LOCKED)
RETURNING seq, id, queue_id, liveness_url, liveness_state, failures_in_row, headers`, ["now", "limit", "hold"]);

export const RECORD_PROBE = positional(`
UPDATE listeners SET liveness_state = $state, failures_in_row = $failures,
  success_count = success_count + $ok, failure_count = failure_count + 1 - $ok, next_probe_at = $next,
  down_since = CASE WHEN $state = 'down' THEN coalesce(down_since, $now) ELSE NULL END
WHERE seq = $seq`, ["seq", "state", "failures", "ok", "next", "now"]);

/**
 * In chunks: resuming a million held rows in one statement would hold their locks for seconds. A paused
 * listener's rows stay held, whatever its probes say.
 */
export const RESUME = positional(`
UPDATE deliveries SET next_attempt_at = $now, updated_at = $now
WHERE id IN (SELECT id FROM deliveries WHERE listener_seq = $seq AND state = 'pending' AND next_attempt_at IS NULL
  AND (SELECT enabled FROM listeners WHERE seq = $seq) LIMIT $limit FOR UPDATE SKIP LOCKED)`, ["seq", "limit", "now"]);

/**
 * Retention: the oldest messages made before $floor (ids start with their time, compared byte by byte) whose
 * deliveries are all final; deleting one cascades to its deliveries and their attempts.
 */
export const DELETE_EXPIRED = positional(`
DELETE FROM messages WHERE seq IN (SELECT m.seq FROM messages m
  WHERE m.id < $floor AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = m.seq AND d.state IN ('pending', 'sending'))
  ORDER BY m.id LIMIT $limit)`, ["floor", "limit"]);

export const CHECK_WRITABLE = `INSERT INTO readiness (id, checked_at) VALUES (1, $1)
  ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at`;
