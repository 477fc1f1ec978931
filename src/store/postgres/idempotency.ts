/**
 * Idempotency-Key records on PostgreSQL (store/index.ts IdempotencyStore), as on SQLite: the record is made by the
 * request's first write, in that write's transaction (`claimKey`, beside the write's usage event; a publish's in
 * its batch statement, publish.ts), and the answer is stored once it is rendered (`complete`).
 */
import { and, eq, gte, sql } from "drizzle-orm";
import { idempotencyKeys } from "./schema.ts";
import { guarded } from "./errors.ts";
import type { PgTx } from "./client.ts";
import type { Conn } from "./shared.ts";
import type { Actor, IdempotencyStore } from "../index.ts";

const SWEEP_BATCH = 2_000;

/**
 * Records the request's key in the current write transaction, once per request; an expired record is replaced. A
 * claim whose transaction rolled back afterwards (writer.ts retries a deadlock) has no record: `complete` makes it.
 */
export async function claimKey(tx: PgTx, orgId: string, actor: Actor | null, now: number): Promise<void> {
  const claim = actor?.idempotency;
  if (!claim || claim.claimed) return;
  await tx.execute(sql`INSERT INTO idempotency_keys (key_hash, org_id, fingerprint, status, response, created_at)
    VALUES (${claim.keyHash}, ${orgId}, ${claim.fingerprint}, NULL, NULL, ${now})
    ON CONFLICT (key_hash) DO UPDATE SET org_id = excluded.org_id, fingerprint = excluded.fingerprint, status = NULL,
      response = NULL, created_at = excluded.created_at`);
  claim.claimed = true;
}

export function idempotencyStore({ db, write }: Conn): IdempotencyStore {
  return {
    find: (orgId, keyHash, since) =>
      guarded(async () => {
        const [row] = await db.select().from(idempotencyKeys)
          .where(and(eq(idempotencyKeys.keyHash, keyHash), eq(idempotencyKeys.orgId, orgId), gte(idempotencyKeys.createdAt, since)));
        if (!row) return null;
        const response = row.status !== null && row.response !== null ? { status: row.status, body: new Uint8Array(row.response) } : null;
        return { fingerprint: row.fingerprint, response, createdAt: row.createdAt };
      }),
    complete: (orgId, claim, response, now) =>
      write(async (tx) => {
        const body = Buffer.from(response.body);
        // A claimed record keeps its time; one whose claiming write rolled back (or none was made) is recorded now.
        if (claim.claimed) {
          const updated = await tx.update(idempotencyKeys).set({ status: response.status, response: body })
            .where(and(eq(idempotencyKeys.keyHash, claim.keyHash), eq(idempotencyKeys.orgId, orgId), eq(idempotencyKeys.fingerprint, claim.fingerprint)))
            .returning({ keyHash: idempotencyKeys.keyHash });
          if (updated.length > 0) return;
        }
        await tx.insert(idempotencyKeys)
          .values({ keyHash: claim.keyHash, orgId, fingerprint: claim.fingerprint, status: response.status, response: body, createdAt: now })
          .onConflictDoUpdate({ target: idempotencyKeys.keyHash, set: { orgId, fingerprint: claim.fingerprint, status: response.status, response: body, createdAt: now } });
        claim.claimed = true;
      }),
    sweep: (before) =>
      guarded(async () => {
        let total = 0;
        for (;;) {
          const deleted = (await db.$client.unsafe(
            `DELETE FROM idempotency_keys WHERE key_hash = ANY(ARRAY(SELECT key_hash FROM idempotency_keys WHERE created_at < $1 LIMIT ${SWEEP_BATCH}))`,
            [before],
          )).count as number;
          total += deleted;
          if (deleted < SWEEP_BATCH) return total;
        }
      }),
  };
}
