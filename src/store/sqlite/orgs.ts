import { and, eq, sql } from "drizzle-orm";
import { orgs, queues } from "./schema.ts";
import { unique, recordEvent, type Conn } from "./shared.ts";
import { newId } from "../../lib/ids.ts";
import { insertKey } from "./api-keys.ts";
import { notFound } from "../../lib/errors.ts";
import type { OrgStore, Org } from "../index.ts";
import { unknownEventsQueue } from "../rows.ts";

const toOrg = (r: typeof orgs.$inferSelect): Org => ({ id: r.id, name: r.name, eventsQueueId: r.eventsQueueId, createdAt: r.createdAt });

export function orgStore({ db, write }: Conn): OrgStore {
  const byId = db.select().from(orgs).where(eq(orgs.id, sql.placeholder("id"))).prepare();
  const get = (id: string) => {
    const row = byId.get({ id });
    if (!row) throw notFound("The api client");
    return toOrg(row);
  };
  return {
    async create(name, now, owner) {
      const org = { id: newId("org", now), name, eventsQueueId: null, createdAt: now };
      return write((tx) => {
        unique(`An organization named '${name}' already exists.`, () => tx.insert(orgs).values(org).run());
        if (owner) insertKey(tx, org.id, owner, now, null);
        return org;
      });
    },
    async list() {
      return db.select().from(orgs).orderBy(orgs.createdAt).all().map(toOrg);
    },
    async get(orgId) {
      return get(orgId);
    },
    async update(orgId, patch, now, actor) {
      return write((tx) => {
        get(orgId);
        if (patch.eventsQueueId && !tx.select({ id: queues.id }).from(queues).where(and(eq(queues.orgId, orgId), eq(queues.id, patch.eventsQueueId))).get()) {
          throw unknownEventsQueue();
        }
        const set = { ...(patch.name !== undefined && { name: patch.name }), ...(patch.eventsQueueId !== undefined && { eventsQueueId: patch.eventsQueueId }) };
        if (Object.keys(set).length) {
          unique(`An organization named '${patch.name}' already exists.`, () => tx.update(orgs).set(set).where(eq(orgs.id, orgId)).run());
        }
        recordEvent(tx, orgId, "api_client_updated", now, actor, {});
        return get(orgId);
      });
    },
  };
}
