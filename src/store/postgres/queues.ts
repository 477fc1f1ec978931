import { and, asc, eq } from "drizzle-orm";
import { orgs, queues, listeners } from "./schema.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { Queue, QueueStore } from "../index.ts";
import { newQueue, queueChanges, queueNameTaken as taken, toQueue } from "../rows.ts";

export async function findQueue(db: PgDb | PgTx, orgId: string, id: string): Promise<Queue> {
  const [row] = await db.select().from(queues).where(and(eq(queues.orgId, orgId), eq(queues.id, lookupId(id))));
  if (!row) throw notFound("The queue");
  return toQueue(row);
}

export function queueStore({ db, write }: Conn): QueueStore {
  return {
    create: (orgId, input, now, actor) =>
      write(async (tx) => {
        const row = newQueue(orgId, input, now);
        await unique(taken(input.name), () => tx.insert(queues).values(row));
        await recordEvent(tx, orgId, "queue_added", now, actor, { queue: row });
        return toQueue(row);
      }),
    list: (orgId, visible, page) =>
      guarded(async () => {
        const where = and(eq(queues.orgId, orgId), visibleWhere(visible, queues.id));
        const rows = await db.select().from(queues).where(where).orderBy(asc(queues.seq)).limit(page.limit).offset(page.offset);
        return { items: rows.map(toQueue), total: await countOf(db, queues, where) };
      }),
    get: (orgId, id) => guarded(() => findQueue(db, orgId, id)),
    update: (orgId, id, input, now, actor) =>
      write(async (tx) => {
        await findQueue(tx, orgId, id);
        await unique(taken(input.name), () => tx.update(queues).set(queueChanges(input)).where(eq(queues.id, id)));
        const queue = await findQueue(tx, orgId, id);
        await recordEvent(tx, orgId, "queue_updated", now, actor, { queue });
        return queue;
      }),
    delete: (orgId, id, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, id);
        // Its listeners, messages, deliveries and attempts go with it (a foreign key and triggers, schema.ts).
        await tx.delete(queues).where(eq(queues.id, id));
        await tx.update(orgs).set({ eventsQueueId: null }).where(and(eq(orgs.id, orgId), eq(orgs.eventsQueueId, id)));
        await recordEvent(tx, orgId, "queue_deleted", now, actor, { queue });
      }),
    listenerNames: (orgId, id) =>
      guarded(() =>
        db
          .select({ id: listeners.id, name: listeners.name })
          .from(listeners)
          .where(and(eq(listeners.orgId, orgId), eq(listeners.queueId, id)))
          .orderBy(asc(listeners.seq)),
      ),
  };
}
