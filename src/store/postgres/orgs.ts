import { and, asc, eq } from "drizzle-orm";
import { orgs, queues } from "./schema.ts";
import { unique, recordEvent, type Conn } from "./shared.ts";
import { lookupId } from "./text.ts";
import { guarded } from "./errors.ts";
import { insertKey } from "./api-keys.ts";
import type { PgDb, PgTx } from "./client.ts";
import { notFound } from "../../lib/errors.ts";
import type { OrgStore, Org } from "../index.ts";
import { newOrg, orgChanges, orgNameTaken as taken, toOrg, unknownEventsQueue } from "../rows.ts";

async function find(db: PgDb | PgTx, id: string): Promise<Org> {
  const [row] = await db.select().from(orgs).where(eq(orgs.id, lookupId(id)));
  if (!row) throw notFound("The api client");
  return toOrg(row);
}

export function orgStore({ db, write }: Conn): OrgStore {
  return {
    create: (name, now, owner) =>
      write(async (tx) => {
        const org = newOrg(name, now);
        await unique(taken(name), () => tx.insert(orgs).values(org));
        if (owner) await insertKey(tx, org.id, owner, now, null);
        return org;
      }),
    list: () => guarded(async () => (await db.select().from(orgs).orderBy(asc(orgs.createdAt), asc(orgs.seq))).map(toOrg)),
    get: (orgId) => guarded(() => find(db, orgId)),
    update: (orgId, patch, now, actor) =>
      write(async (tx) => {
        await find(tx, orgId);
        if (patch.eventsQueueId) {
          // Locked, so a delete of the queue waits and then clears it (queues.ts).
          const [queue] = await tx.select({ id: queues.id }).from(queues)
            .where(and(eq(queues.orgId, orgId), eq(queues.id, lookupId(patch.eventsQueueId)))).for("share");
          if (!queue) throw unknownEventsQueue();
        }
        const set = orgChanges(patch);
        if (set) await unique(taken(patch.name ?? ""), () => tx.update(orgs).set(set).where(eq(orgs.id, orgId)));
        const org = await find(tx, orgId);
        await recordEvent(tx, orgId, "api_client_updated", now, actor, {});
        return org;
      }),
  };
}
