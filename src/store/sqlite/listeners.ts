import { and, asc, desc, eq } from "drizzle-orm";
import { deliveries, listenerFilters, listeners, messages, portalSessionListeners, replays } from "./schema.ts";
import { countReplayable, windowSeqs } from "./replays.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn, type Db, type Tx } from "./shared.ts";
import { findQueue } from "./queues.ts";
import { fannedOutUpTo, lastMessageSeq } from "./fanout.ts";
import { notFound } from "../../lib/errors.ts";
import type { Listener, ListenerStore } from "../index.ts";
import { lineOf, filterChanged, listenerChanges, listenerNameTaken as taken, newListener, toListener as rowToListener, toListenerDelivery, toSecrets } from "../rows.ts";

type Row = typeof listeners.$inferSelect;
const toListener = (r: Row): Listener => rowToListener(r, JSON.parse(r.missed));

function findRow(tx: Db | Tx, orgId: string, queueId: string, id: string): Row {
  findQueue(tx, orgId, queueId);
  const row = tx
    .select()
    .from(listeners)
    .where(and(eq(listeners.orgId, orgId), eq(listeners.queueId, queueId), eq(listeners.id, id)))
    .get();
  if (!row) throw notFound("The listener");
  return row;
}

/**
 * The filter a listener had until now still judges the messages published under it that wait for their fan-out
 * (store/sqlite/fanout-filters.ts): kept until the worker's cursor passes the last of them.
 */
function keepFilter(tx: Tx, before: Row): void {
  const upto = lastMessageSeq(tx);
  if (fannedOutUpTo(tx) >= upto) return;
  tx.insert(listenerFilters).values({ listenerSeq: before.seq, uptoSeq: upto, filter: before.filter }).run();
}

/** Its deliveries not yet final join (or leave) its FIFO line: an order applies to deliveries not yet started. */
function setLine(tx: Tx, seq: number, fifo: boolean): void {
  const line = fifo ? 1 : 0;
  tx.$client.query("UPDATE deliveries SET line = ? WHERE listener_seq = ? AND state = 'pending'").run(line, seq);
  tx.$client.query("UPDATE deliveries SET line = ? WHERE id IN (SELECT id FROM deliveries WHERE state = 'sending' AND listener_seq = ?)").run(line, seq);
}

export function listenerStore({ db, write }: Conn): ListenerStore {
  return {
    async create(orgId, queueId, input, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        // It receives the messages published after this commit (fanout.ts).
        const row = { ...newListener(orgId, queueId, input, now), fromSeq: lastMessageSeq(tx) };
        unique(taken(input.name), () => tx.insert(listeners).values(row).run());
        // Made through a portal session: the session reaches it from now on (docs/portal.md).
        if (actor.portalSession) tx.insert(portalSessionListeners).values({ sessionId: actor.portalSession, listenerId: row.id }).run();
        const listener = toListener(findRow(tx, orgId, queueId, row.id));
        recordEvent(tx, orgId, "listener_added", now, actor, { queue, listener });
        return listener;
      });
    },
    async list(orgId, filter, page) {
      const where = and(
        eq(listeners.orgId, orgId),
        filter.queueId ? eq(listeners.queueId, filter.queueId) : undefined,
        visibleWhere(filter.visible, listeners.id, listeners.queueId),
      );
      if (filter.queueId) findQueue(db, orgId, filter.queueId);
      const rows = db.select().from(listeners).where(where).orderBy(asc(listeners.seq)).limit(page.limit).offset(page.offset).all();
      return { items: rows.map(toListener), total: countOf(db, listeners, where) };
    },
    async get(orgId, queueId, id) {
      const row = findRow(db, orgId, queueId, id);
      const listener = toListener(row);
      if (row.ordering === "fifo") {
        listener.line = await lineOf((sql, params) => db.$client.query(sql).all(...(params as number[])), row.seq, "INDEXED BY deliveries_line");
      }
      return listener;
    },
    async update(orgId, queueId, id, patch, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const before = findRow(tx, orgId, queueId, id);
        const set = listenerChanges(before, patch, now);
        if (filterChanged(before, set)) keepFilter(tx, before);
        if (set?.ordering !== undefined && set.ordering !== before.ordering) setLine(tx, before.seq, set.ordering === "fifo");
        if (set) unique(taken(patch.name ?? ""), () => tx.update(listeners).set(set).where(eq(listeners.id, id)).run());
        const listener = toListener(findRow(tx, orgId, queueId, id));
        recordEvent(tx, orgId, "listener_updated", now, actor, { queue, listener });
        return listener;
      });
    },
    async delete(orgId, queueId, id, now, actor) {
      await write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const listener = findRow(tx, orgId, queueId, id);
        tx.delete(listeners).where(eq(listeners.id, id)).run();
        recordEvent(tx, orgId, "listener_deleted", now, actor, { queue, listener });
      }, { mode: "alone" }); // its deliveries and their attempts go with it: any number of rows
    },
    async replay(orgId, queueId, id, window, now, actor) {
      const listener = findRow(db, orgId, queueId, id);
      const range = windowSeqs(db, listener.fromSeq, window);
      const count = range ? await countReplayable(db, listener.seq, range, window) : 0;
      await write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const row = findRow(tx, orgId, queueId, id);
        if (range && count > 0) {
          tx.insert(replays).values({ listenerSeq: row.seq, since: window.since, until: window.until, only: window.only,
            toSeq: range.to, doneSeq: range.from - 1, createdAt: now }).run();
        }
        recordEvent(tx, orgId, "listener_replayed", now, actor, { queue, listener: row });
      });
      return count;
    },
    async deliveries(orgId, queueId, id, page) {
      const listener = findRow(db, orgId, queueId, id);
      const where = eq(deliveries.listenerSeq, listener.seq);
      const rows = db
        .select({
          messageId: messages.id, messageName: messages.name, messageCreatedAt: messages.createdAt, state: deliveries.state,
          attempts: deliveries.attempt, nextAttemptAt: deliveries.nextAttemptAt, lastStatus: deliveries.lastStatus,
          lastError: deliveries.lastError, cycle: deliveries.cycle, updatedAt: deliveries.updatedAt,
        })
        .from(deliveries)
        .innerJoin(messages, eq(messages.seq, deliveries.messageSeq))
        .where(where)
        .orderBy(desc(deliveries.messageSeq)) // the (listener_seq, message_seq) index, read backwards
        .limit(page.limit)
        .offset(page.offset)
        .all();
      return { items: rows.map(toListenerDelivery), total: countOf(db, deliveries, where) };
    },
    async secrets(orgId, queueId, id, now) {
      return toSecrets(findRow(db, orgId, queueId, id), now);
    },
    async rotateSecret(orgId, queueId, id, secret, previousUntil, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, queueId);
        const row = findRow(tx, orgId, queueId, id);
        tx.update(listeners).set({ secret, previousSecret: row.secret, previousSecretUntil: previousUntil }).where(eq(listeners.id, id)).run();
        const secrets = toSecrets(findRow(tx, orgId, queueId, id), now);
        if (actor) recordEvent(tx, orgId, "listener_updated", now, actor, { queue, listener: row });
        return secrets;
      });
    },
  };
}
