/**
 * A delivery's acknowledging attempt lives on its row (acked_at, acked_ms, acked_response; its number, cycle and
 * status are the row's attempt, cycle and last_status), not in attempts: most deliveries succeed at once, and a
 * settle that writes one row instead of two costs about half (docs/performance.md). Every other attempt is an
 * attempts row. The log of a message is the union of both, and a new cycle (a redelivery, a replay) first moves
 * the row's acknowledging attempt to attempts, so each cycle's attempts stay in the log.
 */

/** Copies the acknowledging attempt of the deliveries `d` that `where` names into attempts. */
function moveAcked(where: string): string {
  return `INSERT INTO attempts (delivery_id, attempt, cycle, attempted_at, status_code, duration_ms, error, response)
    SELECT d.id, d.attempt, d.cycle, d.acked_at, d.last_status, d.acked_ms, NULL, d.acked_response FROM deliveries AS d
    WHERE (${where}) AND d.acked_at IS NOT NULL`;
}

/**
 * A new cycle for the deliveries `d` that `where` names (a redelivery, a chunk of a replay), due at `now` (a
 * parameter): `keep` moves each one's acknowledging attempt to attempts, then `start` resets the row with a fresh
 * retry schedule. Run both, in that order, in one transaction.
 */
export function newCycle(where: string, now: string): { keep: string; start: string } {
  return {
    keep: moveAcked(where),
    start: `UPDATE deliveries AS d SET state = 'pending', next_attempt_at = ${now}, attempt = 0, cycle = cycle + 1, held_since = NULL,
      last_status = NULL, last_error = NULL, acked_at = NULL, acked_ms = NULL, acked_response = NULL, updated_at = ${now}
      WHERE ${where}`,
  };
}

/**
 * A message's attempts, newest first: by the time each was made, then by cycle and number within a delivery (an
 * attempt starts after the one before it ended, so these agree), then by listener.
 */
export const MESSAGE_ATTEMPTS_SQL = `SELECT l.id AS listenerId, l.name AS listenerName, a.attempt AS attempt, a.cycle AS cycle,
    a.attempted_at AS attemptedAt, a.status_code AS statusCode, a.duration_ms AS durationMs, a.error AS error, a.response AS response,
    l.seq AS listenerSeq
  FROM deliveries d CROSS JOIN attempts a ON a.delivery_id = d.id CROSS JOIN listeners l ON l.seq = d.listener_seq
  WHERE d.message_seq = ?1
  UNION ALL
  SELECT l.id, l.name, d.attempt, d.cycle, d.acked_at, d.last_status, d.acked_ms, NULL, d.acked_response, l.seq
  FROM deliveries d CROSS JOIN listeners l ON l.seq = d.listener_seq
  WHERE d.message_seq = ?1 AND d.acked_at IS NOT NULL
  ORDER BY attemptedAt DESC, cycle DESC, attempt DESC, listenerSeq DESC`;
