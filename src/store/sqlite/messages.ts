import { and, asc, desc, eq, inArray, lt } from "drizzle-orm";
import { messages, deliveries, listeners } from "./schema.ts";
import { MESSAGE_ATTEMPTS_SQL, newCycle } from "./acked-attempts.ts";
import { recordEvent, countOf, visibleWhere, type Conn, type Db, type Tx } from "./shared.ts";
import { findQueue, queueOfWrite } from "./queues.ts";
import { fannedOutUpTo, nextMessageSeq } from "./fanout.ts";
import { takesMessage } from "./fanout-filters.ts";
import { newId } from "../../lib/ids.ts";
import { notFound, SchemaChanged } from "../../lib/errors.ts";
import type { MessageStore, Actor, PublishInput, PublishedMessage, DeliveryStatus, Attempt } from "../index.ts";
import { chooseTargets, toMessage } from "../rows.ts";

type Row = typeof messages.$inferSelect;

function findRow(tx: Db | Tx, orgId: string, queueId: string, id: string): Row {
  findQueue(tx, orgId, queueId);
  const row = tx
    .select()
    .from(messages)
    .where(and(eq(messages.orgId, orgId), eq(messages.queueId, queueId), eq(messages.id, id)))
    .get();
  if (!row) throw notFound("The message");
  return row;
}

/** A message the worker has not fanned out yet: a pending delivery, due at its publish, per listener it goes to. */
function notFannedOut(db: Db | Tx, row: Row): DeliveryStatus[] {
  return db
    .select({ listenerId: listeners.id, listenerName: listeners.name, seq: listeners.seq, filter: listeners.filter })
    .from(listeners)
    .where(and(eq(listeners.queueId, row.queueId), lt(listeners.fromSeq, row.seq)))
    .orderBy(asc(listeners.seq))
    .all()
    .filter((l) => (row.onlyListener === null ? takesMessage(db, l, row) : row.onlyListener === l.seq))
    .map(({ listenerId, listenerName }) => ({
      listenerId, listenerName, state: "pending" as const, attempts: 0, nextAttemptAt: row.createdAt, lastStatus: null, lastError: null, cycle: 1, updatedAt: row.createdAt,
    }));
}

type Target = { id: number; listenerId: string };

/** The message's deliveries, by listener: the listeners it was fanned out to that still exist. */
function deliveryTargets(tx: Tx, messageSeq: number): Target[] {
  return tx.$client
    .query<Target, [number]>("SELECT d.id AS id, l.id AS listenerId FROM deliveries d JOIN listeners l ON l.seq = d.listener_seq WHERE d.message_seq = ?")
    .all(messageSeq);
}

/** The deliveries `d` a redelivery starts again (?1: their ids). */
export const STARTED_AGAIN = "d.id IN (SELECT value FROM json_each(?1)) AND +d.state != 'sending'";

/**
 * A new cycle for these deliveries, due now, with a fresh retry schedule (attempt 0). One in flight is left to
 * finish: moving it would fence out the answer its receiver is giving. Each one's acknowledging attempt is kept
 * in attempts first (acked-attempts.ts).
 */
function startAgain(tx: Tx, ids: number[], now: number): number {
  if (ids.length === 0) return 0;
  const { keep, start } = newCycle(STARTED_AGAIN, "?2");
  tx.$client.query(keep).run(JSON.stringify(ids));
  return tx.$client.query(start).run(JSON.stringify(ids), now).changes;
}

export type Publish = PublishInput & { orgId: string; queueId: string; now: number; actor: Actor };

/** The seq of a listener of the queue; 404 for another id (before anything is written: a `checked` unit). */
function listenerSeqOf(tx: Tx, queueId: string, listenerId: string): number {
  const row = tx.$client.query<{ seq: number }, [string, string]>("SELECT seq FROM listeners WHERE id = ? AND queue_id = ?").get(listenerId, queueId);
  if (!row) throw notFound("The listener");
  return row.seq;
}

/**
 * The message, with a seq above every seq given out so far: every listener of the queue that exists at this
 * commit (its `from_seq` below that seq) gets a pending delivery due at `now`, written by the delivery worker
 * (fanout.ts). A listener created after this commit cannot be in the set, whatever the clocks say.
 * A `checked` unit of the group commit: its only AppErrors (an unknown queue, a changed schema) come before its
 * first write; keep it so.
 */
export function publishIn(tx: Tx, p: Publish): PublishedMessage {
  const queue = queueOfWrite(tx, p.orgId, p.queueId);
  if (p.schemaId !== undefined && queue.schemaId !== p.schemaId) throw new SchemaChanged();
  const only = p.listenerId === undefined ? null : listenerSeqOf(tx, p.queueId, p.listenerId);
  const id = newId("message", p.now);
  // The hot path of ingest: plain SQL through bun:sqlite's statement cache, no query building per publish.
  tx.$client
    .query<never, [number, string, string, string, string | null, string, number, number | null]>(
      "INSERT INTO messages (seq, id, org_id, queue_id, name, data, created_at, only_listener) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .run(nextMessageSeq(tx), id, p.orgId, p.queueId, p.name, p.data, p.now, only);
  recordEvent(tx, p.orgId, "message_added", p.now, p.actor, { queue, message: { id, name: p.name } });
  return { id, orgId: p.orgId, queueId: p.queueId, name: p.name, createdAt: p.now };
}

export function messageStore({ db, write }: Conn): MessageStore {
  return {
    async publish(orgId, queueId, input, now, actor) {
      return write((tx) => publishIn(tx, { ...input, orgId, queueId, now, actor }), { mode: "checked" });
    },
    async list(orgId, filter, page) {
      const where = and(
        eq(messages.orgId, orgId),
        filter.queueId ? eq(messages.queueId, filter.queueId) : undefined,
        visibleWhere(filter.visible, messages.id, messages.queueId),
      );
      if (filter.queueId) findQueue(db, orgId, filter.queueId);
      const rows = db.select().from(messages).where(where).orderBy(asc(messages.seq)).limit(page.limit).offset(page.offset).all();
      return { items: rows.map(toMessage), total: countOf(db, messages, where) };
    },
    async get(orgId, queueId, id) {
      return toMessage(findRow(db, orgId, queueId, id));
    },
    async deliveries(orgId, queueId, id) {
      const row = findRow(db, orgId, queueId, id);
      if (row.seq > fannedOutUpTo(db)) return notFannedOut(db, row);
      return db
        .select({
          listenerId: listeners.id, listenerName: listeners.name, state: deliveries.state, attempts: deliveries.attempt,
          nextAttemptAt: deliveries.nextAttemptAt, lastStatus: deliveries.lastStatus, lastError: deliveries.lastError, cycle: deliveries.cycle,
          updatedAt: deliveries.updatedAt,
        })
        .from(deliveries)
        .innerJoin(listeners, eq(listeners.seq, deliveries.listenerSeq))
        .where(eq(deliveries.messageSeq, row.seq))
        .orderBy(asc(listeners.seq))
        .all();
    },
    async attempts(orgId, queueId, id) {
      const row = findRow(db, orgId, queueId, id);
      return db.$client.query<Attempt & { listenerSeq: number }, [number]>(MESSAGE_ATTEMPTS_SQL).all(row.seq)
        .map(({ listenerSeq: _, ...attempt }) => attempt);
    },
    async received(orgId, queueId, listenerIds, limit) {
      findQueue(db, orgId, queueId);
      const chosen = listenerIds === null ? undefined : inArray(listeners.id, [...listenerIds]);
      const seqs = db.select({ seq: listeners.seq }).from(listeners).where(and(eq(listeners.queueId, queueId), chosen)).all();
      // Each listener's newest through its (listener_seq, message_seq) index, merged here: one scan per listener.
      const newest = db.$client.query<{ s: number }, [number, number]>("SELECT message_seq AS s FROM deliveries WHERE listener_seq = ? ORDER BY message_seq DESC LIMIT ?");
      const found = [...new Set(seqs.flatMap((l) => newest.all(l.seq, limit).map((r) => r.s)))].sort((a, b) => b - a).slice(0, limit);
      if (found.length === 0) return [];
      return db.select().from(messages).where(inArray(messages.seq, found)).orderBy(desc(messages.seq)).all().map(toMessage);
    },
    async rename(orgId, queueId, id, name, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        findRow(tx, orgId, queueId, id);
        tx.update(messages).set({ name }).where(eq(messages.id, id)).run();
        const message = toMessage(findRow(tx, orgId, queueId, id));
        recordEvent(tx, orgId, "message_updated", now, actor, { queue, message: { id, name } });
        return message;
      });
    },
    async redeliver(orgId, queueId, id, listenerIds, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const row = findRow(tx, orgId, queueId, id);
        const fannedOut = row.seq <= fannedOutUpTo(tx);
        const targets = fannedOut ? deliveryTargets(tx, row.seq) : notFannedOut(tx, row).map((d) => ({ id: 0, listenerId: d.listenerId }));
        const chosen = chooseTargets(targets, listenerIds);
        // Not fanned out yet: its deliveries are about to start their first cycle, which is what was asked.
        const n = fannedOut ? startAgain(tx, chosen.map((t) => t.id), now) : chosen.length;
        recordEvent(tx, orgId, "message_redelivered", now, actor, { queue, message: { id, name: row.name } });
        return n;
      });
    },
    async delete(orgId, queueId, id, now, actor) {
      await write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const row = findRow(tx, orgId, queueId, id);
        tx.delete(messages).where(eq(messages.id, id)).run();
        recordEvent(tx, orgId, "message_deleted", now, actor, { queue, message: { id, name: row.name } });
      });
    },
  };
}
