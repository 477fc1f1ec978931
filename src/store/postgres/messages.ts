import { and, asc, desc, eq, inArray, ne, sql } from "drizzle-orm";
import { messages, deliveries, listeners, attempts } from "./schema.ts";
import { recordEvent, countOf, visibleWhere, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import { findQueue } from "./queues.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { MessageStore, PublishedMessage } from "../index.ts";
import type { Publish } from "./publish.ts";
import { chooseTargets, toMessage } from "../rows.ts";

type Row = typeof messages.$inferSelect;

async function findRow(db: PgDb | PgTx, orgId: string, queueId: string, id: string): Promise<Row> {
  await findQueue(db, orgId, queueId);
  const [row] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.orgId, orgId), eq(messages.queueId, queueId), eq(messages.id, lookupId(id))));
  if (!row) throw notFound("The message");
  return row;
}

/**
 * A new cycle for these deliveries, due now, with a fresh retry schedule (attempt 0). One in flight is left to
 * finish: moving it would fence out the answer its receiver is giving.
 */
async function startAgain(tx: PgTx, ids: number[], now: number): Promise<number> {
  if (ids.length === 0) return 0;
  const changed = await tx
    .update(deliveries)
    .set({ state: "pending", nextAttemptAt: now, attempt: 0, cycle: sql`${deliveries.cycle} + 1`, heldSince: null, lastStatus: null, lastError: null, updatedAt: now })
    .where(and(inArray(deliveries.id, ids), ne(deliveries.state, "sending")))
    .returning({ id: deliveries.id });
  return changed.length;
}

/** `publish` joins the process's next publish batch (writer.ts, publish.ts). */
export function messageStore({ db, write }: Conn, publish: (p: Publish) => Promise<PublishedMessage>): MessageStore {
  return {
    publish: (orgId, queueId, input, now, actor) => publish({ ...input, orgId, queueId, now, actor }),
    list: (orgId, filter, page) =>
      guarded(async () => {
        const where = and(
          eq(messages.orgId, orgId),
          filter.queueId ? eq(messages.queueId, filter.queueId) : undefined,
          visibleWhere(filter.visible, messages.id, messages.queueId),
        );
        if (filter.queueId) await findQueue(db, orgId, filter.queueId);
        const rows = await db.select().from(messages).where(where).orderBy(asc(messages.seq)).limit(page.limit).offset(page.offset);
        return { items: rows.map(toMessage), total: await countOf(db, messages, where) };
      }),
    get: (orgId, queueId, id) => guarded(async () => toMessage(await findRow(db, orgId, queueId, id))),
    deliveries: (orgId, queueId, id) =>
      guarded(async () => {
        const row = await findRow(db, orgId, queueId, id);
        return db
          .select({
            listenerId: listeners.id, listenerName: listeners.name, state: deliveries.state, attempts: deliveries.attempt,
            nextAttemptAt: deliveries.nextAttemptAt, lastStatus: deliveries.lastStatus, lastError: deliveries.lastError, cycle: deliveries.cycle,
            updatedAt: deliveries.updatedAt,
          })
          .from(deliveries)
          .innerJoin(listeners, eq(listeners.seq, deliveries.listenerSeq))
          .where(eq(deliveries.messageSeq, row.seq))
          .orderBy(asc(listeners.seq));
      }),
    attempts: (orgId, queueId, id) =>
      guarded(async () => {
        const row = await findRow(db, orgId, queueId, id);
        return db
          .select({
            listenerId: listeners.id, listenerName: listeners.name, attempt: attempts.attempt, cycle: attempts.cycle, attemptedAt: attempts.attemptedAt,
            statusCode: attempts.statusCode, durationMs: attempts.durationMs, error: attempts.error, response: attempts.response,
          })
          .from(attempts)
          .innerJoin(deliveries, eq(deliveries.id, attempts.deliveryId))
          .innerJoin(listeners, eq(listeners.seq, deliveries.listenerSeq))
          .where(eq(deliveries.messageSeq, row.seq))
          // Newest first, as the SQLite store orders them (store/sqlite/acked-attempts.ts).
          .orderBy(desc(attempts.attemptedAt), desc(attempts.cycle), desc(attempts.attempt), desc(listeners.seq));
      }),
    received: (orgId, queueId, listenerIds, limit) =>
      guarded(async () => {
        await findQueue(db, orgId, queueId);
        const chosen = listenerIds === null ? undefined : inArray(listeners.id, listenerIds.map(lookupId));
        const seqs = await db.select({ seq: listeners.seq }).from(listeners).where(and(eq(listeners.queueId, queueId), chosen));
        // Each listener's newest through its (listener_seq, message_seq) index, merged here: one scan per listener.
        const per = await Promise.all(seqs.map((l) =>
          db.select({ s: deliveries.messageSeq }).from(deliveries).where(eq(deliveries.listenerSeq, l.seq)).orderBy(desc(deliveries.messageSeq)).limit(limit)));
        const found = [...new Set(per.flat().map((r) => r.s))].sort((a, b) => b - a).slice(0, limit);
        if (found.length === 0) return [];
        return (await db.select().from(messages).where(inArray(messages.seq, found)).orderBy(desc(messages.seq))).map(toMessage);
      }),
    rename: (orgId, queueId, id, name, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        await findRow(tx, orgId, queueId, id);
        await tx.update(messages).set({ name }).where(eq(messages.id, id));
        const message = toMessage(await findRow(tx, orgId, queueId, id));
        await recordEvent(tx, orgId, "message_updated", now, actor, { queue, message: { id, name } });
        return message;
      }),
    redeliver: (orgId, queueId, id, listenerIds, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const row = await findRow(tx, orgId, queueId, id);
        const targets = await tx
          .select({ id: deliveries.id, listenerId: listeners.id })
          .from(deliveries)
          .innerJoin(listeners, eq(listeners.seq, deliveries.listenerSeq))
          .where(eq(deliveries.messageSeq, row.seq));
        const chosen = chooseTargets(targets, listenerIds);
        const n = await startAgain(tx, chosen.map((t) => t.id), now);
        await recordEvent(tx, orgId, "message_redelivered", now, actor, { queue, message: { id, name: row.name } });
        return n;
      }),
    delete: (orgId, queueId, id, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const row = await findRow(tx, orgId, queueId, id);
        await tx.delete(messages).where(eq(messages.id, id)); // its deliveries and attempts go with it
        await recordEvent(tx, orgId, "message_deleted", now, actor, { queue, message: { id, name: row.name } });
      }),
  };
}
