import { and, asc, desc, eq, inArray } from "drizzle-orm";
import { deliveries, listeners, messages, portalSessionListeners, replays } from "./schema.ts";
import { countReplayable, windowSeqs } from "./replays.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import { findQueue } from "./queues.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { Listener, ListenerStore } from "../index.ts";
import { lineOf, filterChanged, listenerChanges, listenerNameTaken as taken, newListener, toListener as rowToListener, toListenerDelivery, toSecrets } from "../rows.ts";

type Row = typeof listeners.$inferSelect;
const toListener = (r: Row): Listener => rowToListener(r, r.missed);

async function findRow(db: PgDb | PgTx, orgId: string, queueId: string, id: string): Promise<Row> {
  await findQueue(db, orgId, queueId);
  const [row] = await db
    .select()
    .from(listeners)
    .where(and(eq(listeners.orgId, orgId), eq(listeners.queueId, queueId), eq(listeners.id, lookupId(id))));
  if (!row) throw notFound("The listener");
  return row;
}

export function listenerStore({ db, write }: Conn): ListenerStore {
  return {
    // A publish's statement sees the listener once this commits, and from then on every message goes to it.
    create: (orgId, queueId, input, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const row = newListener(orgId, queueId, input, now);
        await unique(taken(input.name), () => tx.insert(listeners).values(row));
        // Made through a portal session: the session reaches it from now on (docs/portal.md).
        if (actor.portalSession) await tx.insert(portalSessionListeners).values({ sessionId: actor.portalSession, listenerId: row.id });
        const listener = toListener(await findRow(tx, orgId, queueId, row.id));
        await recordEvent(tx, orgId, "listener_added", now, actor, { queue, listener });
        return listener;
      }),
    list: (orgId, filter, page) =>
      guarded(async () => {
        const where = and(
          eq(listeners.orgId, orgId),
          filter.queueId ? eq(listeners.queueId, filter.queueId) : undefined,
          visibleWhere(filter.visible, listeners.id, listeners.queueId),
        );
        if (filter.queueId) await findQueue(db, orgId, filter.queueId);
        const rows = await db.select().from(listeners).where(where).orderBy(asc(listeners.seq)).limit(page.limit).offset(page.offset);
        return { items: rows.map(toListener), total: await countOf(db, listeners, where) };
      }),
    get: (orgId, queueId, id) =>
      guarded(async () => {
        const row = await findRow(db, orgId, queueId, id);
        const listener = toListener(row);
        if (row.ordering === "fifo") listener.line = await lineOf((sql, params) => db.$client.unsafe(sql, params), row.seq);
        return listener;
      }),
    update: (orgId, queueId, id, patch, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const before = await findRow(tx, orgId, queueId, id);
        const set = listenerChanges(before, patch, now);
        // A publish judged against the filter before this one is refused and judged again (publish-filters.ts).
        const changes = set && filterChanged(before, set) ? { ...set, filterRev: before.filterRev + 1 } : set;
        if (changes) await unique(taken(patch.name ?? ""), () => tx.update(listeners).set(changes).where(eq(listeners.id, id)));
        // Its deliveries not yet final join (or leave) its FIFO line: an order applies to deliveries not yet started.
        if (set?.ordering !== undefined && set.ordering !== before.ordering) {
          await tx.update(deliveries).set({ line: set.ordering === "fifo" ? 1 : 0 })
            .where(and(eq(deliveries.listenerSeq, before.seq), inArray(deliveries.state, ["pending", "sending"])));
        }
        const listener = toListener(await findRow(tx, orgId, queueId, id));
        await recordEvent(tx, orgId, "listener_updated", now, actor, { queue, listener });
        return listener;
      }),
    delete: (orgId, queueId, id, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const listener = await findRow(tx, orgId, queueId, id);
        await tx.delete(listeners).where(eq(listeners.id, id)); // its deliveries and their attempts go with it
        await recordEvent(tx, orgId, "listener_deleted", now, actor, { queue, listener });
      }),
    replay: (orgId, queueId, id, window, now, actor) =>
      guarded(async () => {
        const listener = await findRow(db, orgId, queueId, id);
        const range = await windowSeqs(db.$client, window);
        const count = range ? await countReplayable(db.$client, listener.seq, range, window) : 0;
        await write(async (tx) => {
          const queue = await findQueue(tx, orgId, queueId);
          const row = await findRow(tx, orgId, queueId, id);
          if (range && count > 0) {
            await tx.insert(replays).values({ listenerSeq: row.seq, since: window.since, until: window.until, only: window.only,
              toSeq: range.to, doneSeq: range.from - 1, createdAt: now });
          }
          await recordEvent(tx, orgId, "listener_replayed", now, actor, { queue, listener: row });
        });
        return count;
      }),
    deliveries: (orgId, queueId, id, page) =>
      guarded(async () => {
        const listener = await findRow(db, orgId, queueId, id);
        const where = eq(deliveries.listenerSeq, listener.seq);
        const rows = await db
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
          .offset(page.offset);
        return { items: rows.map(toListenerDelivery), total: await countOf(db, deliveries, where) };
      }),
    secrets: (orgId, queueId, id, now) => guarded(async () => toSecrets(await findRow(db, orgId, queueId, id), now)),
    rotateSecret: (orgId, queueId, id, secret, previousUntil, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, queueId);
        const row = await findRow(tx, orgId, queueId, id);
        await tx.update(listeners).set({ secret, previousSecret: row.secret, previousSecretUntil: previousUntil }).where(eq(listeners.id, id));
        const secrets = toSecrets(await findRow(tx, orgId, queueId, id), now);
        if (actor) await recordEvent(tx, orgId, "listener_updated", now, actor, { queue, listener: row });
        return secrets;
      }),
  };
}
