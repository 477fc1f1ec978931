import { and, asc, eq, gt, gte, like, lt, or, sql } from "drizzle-orm";
import { events } from "./schema.ts";
import type { Db } from "./shared.ts";
import type { EventStore, UsageEvent } from "../index.ts";

type Row = typeof events.$inferSelect;
const ref = (id: string | null, name: string | null) => (id ? { id, name: name ?? "" } : null);
const toEvent = (r: Row): UsageEvent => ({
  id: r.id,
  type: r.type,
  storedAt: r.storedAt,
  orgId: r.orgId,
  apiKey: ref(r.apiKeyId, r.apiKeyName),
  queue: ref(r.queueId, r.queueName),
  listener: ref(r.listenerId, r.listenerName),
  message: r.messageId ? { id: r.messageId, name: r.messageName } : null,
});

export function eventStore(db: Db): EventStore {
  return {
    async list(orgId, q) {
      const after = q.after
        ? or(gt(events.storedAt, q.after.storedAt), and(eq(events.storedAt, q.after.storedAt), gt(events.id, q.after.id)))
        : undefined;
      const rows = db
        .select()
        .from(events)
        .where(and(eq(events.orgId, orgId), gte(events.storedAt, q.since), q.prefix ? like(events.type, `${q.prefix}%`) : undefined, after))
        .orderBy(asc(events.storedAt), asc(events.id))
        .limit(q.limit)
        .all();
      return rows.map(toEvent);
    },
    async sweep(before) {
      return db.delete(events).where(lt(events.storedAt, before)).run().changes;
    },
  };
}
