import { transactionMemo } from "./transaction-memo.ts";
import { and, asc, eq } from "drizzle-orm";
import { orgs, queues, listeners } from "./schema.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn, type Db, type Tx } from "./shared.ts";
import { notFound } from "../../lib/errors.ts";
import type { Queue, QueueStore } from "../index.ts";
import { newQueue, queueChanges, queueNameTaken as taken, toQueue } from "../rows.ts";

type RawQueue = { id: string; org_id: string; name: string; schema: string | null; schema_id: string | null; created_at: number };

/** Every publish reads its queue: plain SQL through bun:sqlite's statement cache. */
export function findQueue(tx: Db | Tx, orgId: string, id: string): Queue {
  const row = tx.$client
    .query<RawQueue, [string, string]>("SELECT id, org_id, name, schema, schema_id, created_at FROM queues WHERE org_id = ? AND id = ?")
    .get(orgId, id);
  if (!row) throw notFound("The queue");
  return { id: row.id, orgId: row.org_id, name: row.name, schema: row.schema === null ? null : JSON.parse(row.schema), schemaId: row.schema_id, createdAt: row.created_at };
}

/**
 * The queues one write transaction of a connection has read, by organization and id. The publishes of a batch
 * read the same queue again and again (its schema id guards against a change since they were validated): a
 * SELECT and a JSON.parse per publish, a few percent of its cost. Nothing else writes queues while this
 * connection holds the write lock, so the memo holds until the transaction ends; the group commit clears it at
 * every BEGIN (conn.ts) and every queue write clears it before it changes a queue.
 */
export const queueReads = transactionMemo<Queue>();

/** `findQueue` inside a write transaction, through the connection's memo (none outside the group commit). */
export function queueOfWrite(tx: Tx, orgId: string, id: string): Queue {
  const memo = queueReads.during(tx.$client);
  const key = `${orgId}/${id}`;
  const hit = memo?.get(key);
  if (hit) return hit;
  const queue = findQueue(tx, orgId, id);
  memo?.set(key, queue);
  return queue;
}

const forgetQueues = (tx: Tx) => queueReads.during(tx.$client)?.clear();

export function queueStore({ db, write }: Conn): QueueStore {
  return {
    async create(orgId, input, now, actor) {
      return write((tx) => {
        const row = newQueue(orgId, input, now);
        unique(taken(input.name), () => tx.insert(queues).values(row).run());
        recordEvent(tx, orgId, "queue_added", now, actor, { queue: row });
        return toQueue(row);
      });
    },
    async list(orgId, visible, page) {
      const where = and(eq(queues.orgId, orgId), visibleWhere(visible, queues.id));
      const rows = db.select().from(queues).where(where).orderBy(asc(queues.seq)).limit(page.limit).offset(page.offset).all();
      return { items: rows.map(toQueue), total: countOf(db, queues, where) };
    },
    async get(orgId, id) {
      return findQueue(db, orgId, id);
    },
    async update(orgId, id, input, now, actor) {
      return write((tx) => {
        findQueue(tx, orgId, id);
        forgetQueues(tx);
        unique(taken(input.name), () => tx.update(queues).set(queueChanges(input)).where(eq(queues.id, id)).run());
        const queue = findQueue(tx, orgId, id);
        recordEvent(tx, orgId, "queue_updated", now, actor, { queue });
        return queue;
      });
    },
    async delete(orgId, id, now, actor) {
      await write((tx) => {
        const queue = findQueue(tx, orgId, id);
        forgetQueues(tx);
        tx.delete(queues).where(eq(queues.id, id)).run();
        tx.update(orgs).set({ eventsQueueId: null }).where(and(eq(orgs.id, orgId), eq(orgs.eventsQueueId, id))).run();
        recordEvent(tx, orgId, "queue_deleted", now, actor, { queue });
      }, { mode: "alone" }); // its listeners, messages, deliveries and attempts go with it: any number of rows
    },
    async listenerNames(orgId, id) {
      return db
        .select({ id: listeners.id, name: listeners.name })
        .from(listeners)
        .where(and(eq(listeners.orgId, orgId), eq(listeners.queueId, id)))
        .orderBy(asc(listeners.seq))
        .all();
    },
  };
}
