import { and, asc, eq, inArray, type SQL } from "drizzle-orm";
import { listeners, portalSessionListeners, portalSessions, queues } from "./schema.ts";
import { recordEvent, countOf, visibleWhere, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import { findQueue } from "./queues.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { PortalSession, PortalSessionStore } from "../index.ts";
import { checkQueueListeners, listenersBySession, newPortalSession, toPortalSession } from "../rows.ts";

type Row = typeof portalSessions.$inferSelect;
type Joined = { session: Row; queueName: string };
const SWEEP_BATCH = 500;

/** The sessions with their queue's name and, for those that name their listeners, the listeners in creation order. */
async function sessionsOf(db: PgDb | PgTx, rows: Joined[]): Promise<PortalSession[]> {
  const naming = rows.filter((r) => !r.session.allListeners).map((r) => r.session.id);
  const pairs = naming.length === 0 ? [] : await db
    .select({ sessionId: portalSessionListeners.sessionId, listenerId: portalSessionListeners.listenerId })
    .from(portalSessionListeners)
    .innerJoin(listeners, eq(listeners.id, portalSessionListeners.listenerId))
    .where(inArray(portalSessionListeners.sessionId, naming))
    .orderBy(asc(listeners.seq));
  const by = listenersBySession(pairs);
  return rows.map((r) => toPortalSession(r.session, r.queueName, by.get(r.session.id) ?? []));
}

const joined = (db: PgDb | PgTx) =>
  db.select({ session: portalSessions, queueName: queues.name }).from(portalSessions).innerJoin(queues, eq(queues.id, portalSessions.queueId));

async function findWhere(db: PgDb | PgTx, where: SQL | undefined): Promise<PortalSession | null> {
  const [row] = await joined(db).where(where);
  return row ? (await sessionsOf(db, [row]))[0]! : null;
}

async function findIn(db: PgDb | PgTx, orgId: string, id: string): Promise<PortalSession> {
  const session = await findWhere(db, and(eq(portalSessions.orgId, orgId), eq(portalSessions.id, lookupId(id))));
  if (!session) throw notFound("The portal session");
  return session;
}

export function portalSessionStore({ db, write }: Conn): PortalSessionStore {
  return {
    create: (orgId, input, now, actor) =>
      write(async (tx) => {
        const queue = await findQueue(tx, orgId, input.queueId);
        const named = input.listenerIds ?? [];
        if (named.length) {
          const found = await tx.select({ id: listeners.id }).from(listeners)
            .where(and(eq(listeners.queueId, queue.id), inArray(listeners.id, named.map(lookupId))));
          checkQueueListeners(named, found.map((l) => l.id));
        }
        const row = newPortalSession(orgId, input, now);
        await tx.insert(portalSessions).values(row);
        if (named.length) await tx.insert(portalSessionListeners).values(named.map((listenerId) => ({ sessionId: row.id, listenerId })));
        const session = await findIn(tx, orgId, row.id);
        await recordEvent(tx, orgId, "portal_session_added", now, actor, { queue, portalSession: { id: row.id } });
        return session;
      }),
    list: (orgId, visible, page) =>
      guarded(async () => {
        const where = and(eq(portalSessions.orgId, orgId), visibleWhere(visible, portalSessions.queueId));
        const rows = await joined(db).where(where).orderBy(asc(portalSessions.seq)).limit(page.limit).offset(page.offset);
        return { items: await sessionsOf(db, rows), total: await countOf(db, portalSessions, where) };
      }),
    get: (orgId, id) => guarded(() => findIn(db, orgId, id)),
    revoke: (orgId, id, now, actor) =>
      write(async (tx) => {
        const session = await findIn(tx, orgId, id);
        if (session.revokedAt !== null) return session;
        await tx.update(portalSessions).set({ revokedAt: now }).where(eq(portalSessions.id, session.id));
        await recordEvent(tx, orgId, "portal_session_deleted", now, actor, { queue: { id: session.queueId, name: session.queueName }, portalSession: { id: session.id } });
        return { ...session, revokedAt: now };
      }),
    authenticate: (hash) => guarded(() => findWhere(db, eq(portalSessions.tokenHash, hash))),
    find: (id) => guarded(() => findWhere(db, eq(portalSessions.id, lookupId(id)))),
    sweep: (before) =>
      guarded(async () => {
        let total = 0;
        for (;;) {
          const deleted = (await db.$client.unsafe(
            `DELETE FROM portal_sessions WHERE seq = ANY(ARRAY(SELECT seq FROM portal_sessions WHERE expires_at < $1 LIMIT ${SWEEP_BATCH}))`,
            [before],
          )).count as number;
          total += deleted;
          if (deleted < SWEEP_BATCH) return total;
        }
      }),
  };
}
