import { and, eq, sql } from "drizzle-orm";
import { orgs, queues } from "./schema.ts";
import { unique, recordEvent, type Conn } from "./shared.ts";
import { insertKey } from "./api-keys.ts";
import { notFound } from "../../lib/errors.ts";
import type { OrgStore } from "../index.ts";
import { newOrg, orgChanges, orgNameTaken as taken, toOrg, unknownEventsQueue } from "../rows.ts";

export function orgStore({ db, write }: Conn): OrgStore {
  const byId = db.select().from(orgs).where(eq(orgs.id, sql.placeholder("id"))).prepare();
  const find = (id: string) => {
    const row = byId.get({ id });
    if (!row) throw notFound("The api client");
    return toOrg(row);
  };
  return {
    async create(name, now, owner) {
      return write((tx) => {
        const org = newOrg(name, now);
        unique(taken(name), () => tx.insert(orgs).values(org).run());
        if (owner) insertKey(tx, org.id, owner, now, null);
        return org;
      });
    },
    async list() {
      return db.select().from(orgs).orderBy(orgs.createdAt).all().map(toOrg);
    },
    async get(orgId) {
      return find(orgId);
    },
    async update(orgId, patch, now, actor) {
      return write((tx) => {
        find(orgId);
        const queue = patch.eventsQueueId ? tx.select({ id: queues.id }).from(queues).where(and(eq(queues.orgId, orgId), eq(queues.id, patch.eventsQueueId))).get() : null;
        if (patch.eventsQueueId && !queue) throw unknownEventsQueue();
        const set = orgChanges(patch);
        if (set) unique(taken(patch.name ?? ""), () => tx.update(orgs).set(set).where(eq(orgs.id, orgId)).run());
        const org = find(orgId);
        recordEvent(tx, orgId, "api_client_updated", now, actor, {});
        return org;
      });
    },
  };
}
