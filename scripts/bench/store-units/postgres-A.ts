import { and, asc, eq } from "drizzle-orm";
import { listeners, replays } from "../../../src/store/postgres/schema.ts";
import { countReplayable, windowSeqs } from "../../../src/store/postgres/replays.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn } from "../../../src/store/postgres/shared.ts";
import { lookupId } from "../../../src/store/postgres/text.ts";
import { guarded } from "../../../src/store/postgres/errors.ts";
import { findQueue } from "../../../src/store/postgres/queues.ts";
import type { PgDb, PgTx } from "../../../src/store/postgres/client.ts";
import { notFound } from "../../../src/lib/errors.ts";
import type { Listener, ListenerStore } from "../../../src/store/index.ts";
import { listenerNameTaken as taken, toListener as rowToListener, toSecrets } from "../../../src/store/rows.ts";
import * as units from "./units-a.ts";
import { runAwaiting } from "./steps.ts";

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

function steps(tx: PgDb | PgTx): units.ListenerSteps {
  return {
    findQueue: (orgId, queueId) => findQueue(tx, orgId, queueId),
    find: (orgId, queueId, id) => findRow(tx, orgId, queueId, id),
    insert: (row) => unique(taken(row.name), async () => void (await tx.insert(listeners).values(row))),
    update: (id, set) => unique(taken(set.name ?? ""), async () => void (await tx.update(listeners).set(set).where(eq(listeners.id, id)))),
    remove: async (id) => void (await tx.delete(listeners).where(eq(listeners.id, id))),
    recordEvent: (orgId, type, now, actor, refs) => recordEvent(tx as PgTx, orgId, type, now, actor, refs),
  };
}

export function listenerStore({ db, write }: Conn): ListenerStore {
  return {
    create: (orgId, queueId, input, now, actor) => write((tx) => runAwaiting(units.create(steps(tx), orgId, queueId, input, now, actor))),
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
    get: (orgId, queueId, id) => guarded(() => runAwaiting(units.get(steps(db), orgId, queueId, id))),
    update: (orgId, queueId, id, patch, now, actor) => write((tx) => runAwaiting(units.update(steps(tx), orgId, queueId, id, patch, now, actor))),
    delete: (orgId, queueId, id, now, actor) => write((tx) => runAwaiting(units.remove(steps(tx), orgId, queueId, id, now, actor))),
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
    secrets: (orgId, queueId, id, now) => guarded(async () => toSecrets(await findRow(db, orgId, queueId, id), now)),
    rotateSecret: (orgId, queueId, id, secret, previousUntil, now, actor) =>
      write((tx) => runAwaiting(units.rotateSecret(steps(tx), orgId, queueId, id, secret, previousUntil, now, actor))),
  };
}
