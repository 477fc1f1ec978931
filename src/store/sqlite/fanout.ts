/**
 * Fan-out after the publish. A publish commits its message (and its usage event) only; the delivery worker then
 * writes one pending delivery per listener for every message past the `fanout` cursor, and moves the cursor, in
 * one transaction (deliveries.ts). The publish is the API thread's hot path, and the delivery row and its
 * indexes were a large share of its SQLite time (docs/performance.md); the worker writes them for many messages
 * in one statement.
 *
 * Which listeners a message goes to is still decided by the publish's commit: a listener receives the messages
 * whose seq is above its `from_seq`, the last seq given out when it was created. For that, seqs only grow: a
 * message's seq is above the newest message's, the cursor and every listener's `from_seq`. The newest message
 * may have been deleted since: after its fan-out a rowid would then come back behind the cursor, and before it,
 * at or below the `from_seq` of a listener created in between, which would then miss the new message. The three
 * are read once per write transaction (the memo), since nothing else gives out seqs while this connection holds
 * the write lock.
 *
 * Between the commit and the worker's next step (a millisecond or two under load) the message has no delivery
 * rows; its deliveries read as pending, due at its publish (messages.ts).
 */
import { transactionMemo } from "./transaction-memo.ts";
import type { Raw } from "./shared.ts";

/** The last message seq given out in the current write transaction of a connection (one key: ""). */
export const messageSeqs = transactionMemo<number>();

/** The cursor, as an SQL expression: 0 before any fan-out. */
export const CURSOR_SQL = "(SELECT coalesce(max(message_seq), 0) FROM fanout)";

/** Each maximum is one step down an index (fanout.test.ts checks the plan). */
export const LAST_SEQ_SQL = `SELECT max((SELECT coalesce(max(seq), 0) FROM messages), ${CURSOR_SQL},
  (SELECT coalesce(max(from_seq), 0) FROM listeners)) AS seq`;

/** The last seq given out: the newest message's, or, if the newest messages were deleted since, the cursor's or a listener's. */
export function lastMessageSeq(tx: Raw): number {
  return tx.$client.query<{ seq: number }, []>(LAST_SEQ_SQL).get()!.seq;
}

/** The seq of the next message published in this transaction. */
export function nextMessageSeq(tx: Raw): number {
  const memo = messageSeqs.during(tx.$client);
  const seq = (memo?.get("") ?? lastMessageSeq(tx)) + 1;
  memo?.set("", seq);
  return seq;
}

/** The cursor: the seq of the last message whose deliveries have been written. */
export function fannedOutUpTo(db: Raw): number {
  return db.$client.query<{ seq: number }, []>(`SELECT ${CURSOR_SQL} AS seq`).get()!.seq;
}
