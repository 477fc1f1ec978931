import { and, asc, eq, inArray, type SQL } from "drizzle-orm";
import { listeners, portalSessionListeners, portalSessions, queues } from "./schema.ts";
import { recordEvent, countOf, visibleWhere, type Conn, type Db, type Tx } from "./shared.ts";
import { findQueue } from "./queues.ts";
import { notFound } from "../../lib/errors.ts";
import type { PortalSession, PortalSessionStore } from "../index.ts";
import { checkQueueListeners, listenersBySession, newPortalSession, toPortalSession } from "../rows.ts";

type Row = typeof portalSessions.$inferSelect;
type Joined = { session: Row; queueName: string };
const SWEEP_BATCH = 500;

/** The sessions with their queue's name and, for those that name their listeners, the listeners in creation order. */
function sessionsOf(db: Db | Tx, rows: Joined[]): PortalSession[] {
  const naming = rows.filter((r) => !r.session.allListeners).map((r) => r.session.id);
  const pairs = naming.length === 0 ? [] : db
    .select({ sessionId: portalSessionListeners.sessionId, listenerId: portalSessionListeners.listenerId })
    .from(portalSessionListeners)
    .innerJoin(listeners, eq(listeners.id, portalSessionListeners.listenerId))
    .where(inArray(portalSessionListeners.sessionId, naming))
    .orderBy(asc(listeners.seq))
    .all();
  const by = listenersBySession(pairs);
  return rows.map((r) => toPortalSession(r.session, r.queueName, by.get(r.session.id) ?? []));
}

const joined = (db: Db | Tx) =>
  db.select({ session: portalSessions, queueName: queues.name }).from(portalSessions).innerJoin(queues, eq(queues.id, portalSessions.queueId));

function findWhere(db: Db | Tx, where: SQL | undefined): PortalSession | null {
  const row = joined(db).where(where).get();
  return row ? sessionsOf(db, [row])[0]! : null;
}

function findIn(db: Db | Tx, orgId: string, id: string): PortalSession {
  const session = findWhere(db, and(eq(portalSessions.orgId, orgId), eq(portalSessions.id, id)));
  if (!session) throw notFound("The portal session");
  return session;
}

export function portalSessionStore({ db, write }: Conn): PortalSessionStore {
  return {
    async create(orgId, input, now, actor) {
      return write((tx) => {
        const queue = findQueue(tx, orgId, input.queueId);
        const named = input.listenerIds ?? [];
        if (named.length) {
          const found = tx.select({ id: listeners.id }).from(listeners)
            .where(and(eq(listeners.queueId, queue.id), inArray(listeners.id, named))).all();
          checkQueueListeners(named, found.map((l) => l.id));
        }
        const row = newPortalSession(orgId, input, now);
        tx.insert(portalSessions).values(row).run();
        if (named.length) tx.insert(portalSessionListeners).values(named.map((listenerId) => ({ sessionId: row.id, listenerId }))).run();
        const session = findIn(tx, orgId, row.id);
        recordEvent(tx, orgId, "portal_session_added", now, actor, { queue, portalSession: { id: row.id } });
        return session;
      });
    },
    async list(orgId, visible, page) {
      const where = and(eq(portalSessions.orgId, orgId), visibleWhere(visible, portalSessions.queueId));
      const rows = joined(db).where(where).orderBy(asc(portalSessions.seq)).limit(page.limit).offset(page.offset).all();
      return { items: sessionsOf(db, rows), total: countOf(db, portalSessions, where) };
    },
    async get(orgId, id) {
      return findIn(db, orgId, id);
    },
    async revoke(orgId, id, now, actor) {
      return write((tx) => {
        const session = findIn(tx, orgId, id);
        if (session.revokedAt !== null) return session;
        tx.update(portalSessions).set({ revokedAt: now }).where(eq(portalSessions.id, id)).run();
        recordEvent(tx, orgId, "portal_session_deleted", now, actor, { queue: { id: session.queueId, name: session.queueName }, portalSession: { id } });
        return { ...session, revokedAt: now };
      });
    },
    async authenticate(hash) {
      return findWhere(db, eq(portalSessions.tokenHash, hash));
    },
    async find(id) {
      return findWhere(db, eq(portalSessions.id, id));
    },
    async sweep(before) {
      let total = 0;
      for (;;) {
        const deleted = await write((tx) =>
          tx.$client
            .query(`DELETE FROM portal_sessions WHERE seq IN (SELECT seq FROM portal_sessions WHERE expires_at < ? LIMIT ${SWEEP_BATCH})`)
            .run(before).changes,
        );
        total += deleted;
        if (deleted < SWEEP_BATCH) return total;
      }
    },
  };
}
