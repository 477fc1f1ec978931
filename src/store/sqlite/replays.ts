/**
 * Replays (docs/delivery.md): the listener's final deliveries of the messages created in a window start a new cycle.
 * The API counts them and queues the replay (listeners.ts); the delivery worker changes them a chunk at a time
 * (replayChunk), so a replay of a million deliveries never holds the write lock for long, and one interrupted by
 * a restart goes on from where it stopped.
 *
 * A window of time becomes a range of message seqs through the message ids, which start with their creation time
 * (lib/ids.ts) and have an index: seqs follow creation time but for messages made in the same millisecond, so the
 * range is taken a second wider on each side and every statement also tests `created_at` itself.
 */
import type { Database } from "bun:sqlite";
import { idFloor, idTime } from "../../lib/ids.ts";
import type { ReplayWindow } from "../index.ts";
import type { Db } from "./shared.ts";
import { planOnce } from "./plan-once.ts";
import { newCycle } from "./acked-attempts.ts";

const MARGIN_MS = 1_000;
/** Message seqs counted per statement: a few milliseconds of the API thread each, with a turn of the event loop between. */
const COUNT_SLICE = 4_096;

export type SeqRange = { from: number; to: number };

/**
 * The seqs of the messages that can lie in the window and were fanned out to a listener created at `fromSeq`:
 * from the lowest seq of the first millisecond with messages at or after the window's widened start, to the
 * highest of the last one before its widened end (ids made in one millisecond are in no seq order).
 */
export function windowSeqs(db: Db, listenerFromSeq: number, window: ReplayWindow): SeqRange | null {
  const first = db.$client.query<{ id: string }, [string]>("SELECT id FROM messages WHERE id >= ? ORDER BY id LIMIT 1")
    .get(idFloor("message", window.since - MARGIN_MS));
  const last = db.$client.query<{ id: string }, [string]>("SELECT id FROM messages WHERE id < ? ORDER BY id DESC LIMIT 1")
    .get(idFloor("message", window.until + MARGIN_MS));
  if (!first || !last) return null;
  const inMs = (fn: "min" | "max", ms: number) => db.$client
    .query<{ seq: number }, [string, string]>(`SELECT ${fn}(seq) AS seq FROM messages WHERE id >= ? AND id < ?`)
    .get(idFloor("message", ms), idFloor("message", ms + 1))!.seq;
  const from = Math.max(inMs("min", idTime(first.id)), listenerFromSeq + 1);
  const to = inMs("max", idTime(last.id));
  return from <= to ? { from, to } : null;
}

/** `state IN (...)` for a replay's `only`. */
export const FINAL_STATES = "(CASE WHEN d.state = 'missed' OR ($only = 'all' AND d.state = 'acknowledged') THEN 1 ELSE 0 END)";

const COUNT_SQL = `SELECT count(*) AS n FROM deliveries d CROSS JOIN messages m ON m.seq = d.message_seq
  WHERE d.listener_seq = $listener AND d.message_seq >= $from AND d.message_seq <= $to AND ${FINAL_STATES} = 1
    AND m.created_at >= $since AND m.created_at < $until`;

/** How many of the listener's deliveries a replay of the window would start again, counted a slice at a time. */
export async function countReplayable(db: Db, listenerSeq: number, range: SeqRange, window: ReplayWindow): Promise<number> {
  const count = db.$client.query<{ n: number }, [Record<string, string | number>]>(COUNT_SQL);
  let total = 0;
  for (let from = range.from; from <= range.to; from += COUNT_SLICE) {
    const to = Math.min(range.to, from + COUNT_SLICE - 1);
    total += count.get({ listener: listenerSeq, from, to, only: window.only, since: window.since, until: window.until })!.n;
    if (to < range.to) await new Promise((resolve) => setImmediate(resolve));
  }
  return total;
}

/** The deliveries `d` one chunk of a replay starts again: the listener's final ones of the window, past `done`. */
export const REPLAY_CHUNK = `d.listener_seq = $listener AND d.message_seq > $done AND d.message_seq <= $upTo AND ${FINAL_STATES} = 1
  AND (SELECT m.created_at FROM messages m WHERE m.seq = d.message_seq) >= $since
  AND (SELECT m.created_at FROM messages m WHERE m.seq = d.message_seq) < $until`;

type Replay = { id: number; listenerSeq: number; since: number; until: number; only: string; toSeq: number; doneSeq: number };

/** The worker's statements: the oldest replay, the end of its next chunk, the chunk itself, its progress. */
export function replayStatements(sqlite: Database) {
  const oldest = sqlite.prepare<Replay, []>(`SELECT id, listener_seq AS listenerSeq, since, until, only, to_seq AS toSeq,
    done_seq AS doneSeq FROM replays ORDER BY id LIMIT 1`);
  const chunkEnd = sqlite.prepare<{ seq: number }, [Record<string, number>]>(planOnce(`SELECT message_seq AS seq FROM deliveries
    WHERE listener_seq = $listener AND message_seq > $done AND message_seq <= $to ORDER BY message_seq LIMIT 1 OFFSET $skip`));
  const cycle = newCycle(REPLAY_CHUNK, "$now");
  const keepAcked = sqlite.prepare<never, [Record<string, string | number>]>(planOnce(cycle.keep));
  const start = sqlite.prepare<never, [Record<string, string | number>]>(planOnce(cycle.start));
  const progress = sqlite.prepare<never, [Record<string, number>]>("UPDATE replays SET done_seq = $done WHERE id = $id");
  const finish = sqlite.prepare<never, [Record<string, number>]>("DELETE FROM replays WHERE id = $id");
  /** One chunk of the oldest replay, in the caller's transaction. */
  return (limit: number, now: number): { replayed: number; more: boolean } => {
    const r = oldest.get();
    if (!r) return { replayed: 0, more: false };
    const end = chunkEnd.get({ listener: r.listenerSeq, done: r.doneSeq, to: r.toSeq, skip: limit - 1 });
    const upTo = end?.seq ?? r.toSeq;
    const chosen = { listener: r.listenerSeq, done: r.doneSeq, upTo, only: r.only, since: r.since, until: r.until };
    keepAcked.run(chosen);
    const replayed = start.run({ ...chosen, now }).changes;
    if (upTo >= r.toSeq) finish.run({ id: r.id });
    else progress.run({ id: r.id, done: upTo });
    return { replayed, more: true };
  };
}
