/**
 * Replays on PostgreSQL, as on SQLite (store/sqlite/replays.ts): the API counts the listener's final
 * deliveries in the window and queues the replay (listeners.ts); the delivery worker that leads the housekeeping
 * starts them again a chunk at a time (replayChunk), from where the last chunk stopped.
 *
 * The window of time becomes a range of message seqs through the message ids, which start with their creation
 * time (byte-wise comparable, schema.ts): seqs follow the order of commits across instances, and an instance's
 * clock may be a little behind another's, so the range is taken a minute wider on each side, and every statement
 * also tests `created_at` itself.
 */
import type { SQL } from "bun";
import { idFloor, idTime } from "../../lib/ids.ts";
import { num } from "./client.ts";
import type { ReplayWindow } from "../index.ts";

const MARGIN_MS = 60_000;

export type SeqRange = { from: number; to: number };

/** The seqs of the messages that can lie in the window (null: none). */
export async function windowSeqs(client: SQL, window: ReplayWindow): Promise<SeqRange | null> {
  const [first] = await client`SELECT id FROM messages WHERE id >= ${idFloor("message", window.since - MARGIN_MS)} ORDER BY id LIMIT 1`;
  const [last] = await client`SELECT id FROM messages WHERE id < ${idFloor("message", window.until + MARGIN_MS)} ORDER BY id DESC LIMIT 1`;
  if (!first || !last) return null;
  const inMs = async (fn: "min" | "max", ms: number) =>
    num((await client.unsafe(`SELECT ${fn}(seq) AS seq FROM messages WHERE id >= $1 AND id < $2`,
      [idFloor("message", ms), idFloor("message", ms + 1)]))[0].seq);
  const from = await inMs("min", idTime(first.id));
  const to = await inMs("max", idTime(last.id));
  return from <= to ? { from, to } : null;
}

/** Whether a delivery is one `only` starts again (`$only` is the replay's). */
const FINAL = "(d.state = 'missed' OR ($only = 'all' AND d.state = 'acknowledged'))";

const COUNT = `SELECT count(*) AS n FROM deliveries d JOIN messages m ON m.seq = d.message_seq
  WHERE d.listener_seq = $1 AND d.message_seq BETWEEN $2 AND $3 AND ${FINAL.replace("$only", "$4")}
    AND m.created_at >= $5 AND m.created_at < $6`;

/** How many of the listener's deliveries a replay of the window would start again. */
export async function countReplayable(client: SQL, listenerSeq: number, range: SeqRange, window: ReplayWindow): Promise<number> {
  const [row] = await client.unsafe(COUNT, [listenerSeq, range.from, range.to, window.only, window.since, window.until]);
  return num(row.n);
}

const START = `UPDATE deliveries d SET state = 'pending', next_attempt_at = $1, attempt = 0, cycle = cycle + 1, held_since = NULL,
    last_status = NULL, last_error = NULL, updated_at = $1
  FROM messages m
  WHERE d.listener_seq = $2 AND d.message_seq > $3 AND d.message_seq <= $4 AND ${FINAL.replace("$only", "$5")}
    AND m.seq = d.message_seq AND m.created_at >= $6 AND m.created_at < $7`;

/** One chunk of the oldest replay, in one transaction; `more` is false when no replay waits. */
export async function replayChunk(client: SQL, limit: number, now: number): Promise<{ replayed: number; more: boolean }> {
  return client.begin(async (tx) => {
    const [r] = await tx`SELECT id, listener_seq, since, until, "only", to_seq, done_seq FROM replays ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`;
    if (!r) return { replayed: 0, more: false };
    const [end] = await tx`SELECT message_seq FROM deliveries WHERE listener_seq = ${r.listener_seq} AND message_seq > ${r.done_seq}
      AND message_seq <= ${r.to_seq} ORDER BY message_seq LIMIT 1 OFFSET ${limit - 1}`;
    const upTo = end ? num(end.message_seq) : num(r.to_seq);
    const started = await tx.unsafe(START, [now, r.listener_seq, r.done_seq, upTo, r.only, r.since, r.until]);
    if (upTo >= num(r.to_seq)) await tx`DELETE FROM replays WHERE id = ${r.id}`;
    else await tx`UPDATE replays SET done_seq = ${upTo} WHERE id = ${r.id}`;
    return { replayed: started.count as number, more: true };
  });
}
