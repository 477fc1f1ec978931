import { and, asc, eq } from "drizzle-orm";
import { listeners, replays } from "../../../src/store/sqlite/schema.ts";
import { countReplayable, windowSeqs } from "../../../src/store/sqlite/replays.ts";
import { unique, recordEvent, countOf, visibleWhere, type Conn, type Db, type Tx } from "../../../src/store/sqlite/shared.ts";
import { findQueue } from "../../../src/store/sqlite/queues.ts";
import { lastMessageSeq } from "../../../src/store/sqlite/fanout.ts";
import { notFound } from "../../../src/lib/errors.ts";
import type { Listener, ListenerStore } from "../../../src/store/index.ts";
import { listenerNameTaken as taken, toListener as rowToListener, toSecrets } from "../../../src/store/rows.ts";
import * as units from "./units-a.ts";
import { runNow } from "./steps.ts";

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

function steps(tx: Db | Tx): units.ListenerSteps {
  return {
    findQueue: (orgId, queueId) => findQueue(tx, orgId, queueId),
    find: (orgId, queueId, id) => {
      const row = findRow(tx, orgId, queueId, id);
      return { ...row, missed: JSON.parse(row.missed) };
    },
    // It receives the messages published after this commit (fanout.ts).
    insert: (row) => void unique(taken(row.name), () => tx.insert(listeners).values({ ...row, fromSeq: lastMessageSeq(tx) }).run()),
    update: (id, set) => void unique(taken(set.name ?? ""), () => tx.update(listeners).set(set).where(eq(listeners.id, id)).run()),
    remove: (id) => void tx.delete(listeners).where(eq(listeners.id, id)).run(),
    recordEvent: (orgId, type, now, actor, refs) => recordEvent(tx, orgId, type, now, actor, refs),
  };
}

export function listenerStore({ db, write }: Conn): ListenerStore {
  return {
    create: (orgId, queueId, input, now, actor) => write((tx) => runNow(units.create(steps(tx), orgId, queueId, input, now, actor))),
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
    get: async (orgId, queueId, id) => runNow(units.get(steps(db), orgId, queueId, id)),
    update: (orgId, queueId, id, patch, now, actor) => write((tx) => runNow(units.update(steps(tx), orgId, queueId, id, patch, now, actor))),
    // Its deliveries and their attempts go with it: any number of rows.
    delete: (orgId, queueId, id, now, actor) => write((tx) => runNow(units.remove(steps(tx), orgId, queueId, id, now, actor)), { mode: "alone" }),
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
    async secrets(orgId, queueId, id, now) {
      return toSecrets(findRow(db, orgId, queueId, id), now);
    },
    rotateSecret: (orgId, queueId, id, secret, previousUntil, now, actor) =>
      write((tx) => runNow(units.rotateSecret(steps(tx), orgId, queueId, id, secret, previousUntil, now, actor))),
  };
}
