/**
 * Idempotency-Key records (store/index.ts IdempotencyStore). The record is made by the request's first write, in
 * that write's transaction (`claimKey`, called beside the write's usage event): a change and its key commit
 * together, so a retry after a crash between the commit and the answer finds the key. The answer is stored once
 * it is rendered (`complete`).
 */
import { and, eq, gte } from "drizzle-orm";
import { idempotencyKeys } from "./schema.ts";
import type { Conn, Tx } from "./shared.ts";
import type { Actor, IdempotencyStore } from "../index.ts";

const SWEEP_BATCH = 2_000;

/** Records the request's key in the current write transaction, once per request. An expired record is replaced. */
export function claimKey(tx: Tx, orgId: string, actor: Actor | null, now: number): void {
  const claim = actor?.idempotency;
  if (!claim || claim.claimed) return;
  tx.$client
    .query(`INSERT INTO idempotency_keys (key_hash, org_id, fingerprint, status, response, created_at) VALUES (?, ?, ?, NULL, NULL, ?)
      ON CONFLICT (key_hash) DO UPDATE SET org_id = excluded.org_id, fingerprint = excluded.fingerprint, status = NULL,
        response = NULL, created_at = excluded.created_at`)
    .run(claim.keyHash, orgId, claim.fingerprint, now);
  claim.claimed = true;
}

export function idempotencyStore({ db, write }: Conn): IdempotencyStore {
  return {
    async find(orgId, keyHash, since) {
      const row = db.select().from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.keyHash, keyHash), eq(idempotencyKeys.orgId, orgId), gte(idempotencyKeys.createdAt, since)))
        .get();
      if (!row) return null;
      const response = row.status !== null && row.response !== null ? { status: row.status, body: new Uint8Array(row.response as Uint8Array) } : null;
      return { fingerprint: row.fingerprint, response, createdAt: row.createdAt };
    },
    async complete(orgId, claim, response, now) {
      await write((tx) => {
        if (!claim.claimed) {
          tx.insert(idempotencyKeys)
            .values({ keyHash: claim.keyHash, orgId, fingerprint: claim.fingerprint, status: response.status, response: Buffer.from(response.body), createdAt: now })
            .onConflictDoUpdate({ target: idempotencyKeys.keyHash, set: { orgId, fingerprint: claim.fingerprint, status: response.status, response: Buffer.from(response.body), createdAt: now } })
            .run();
          claim.claimed = true;
          return;
        }
        tx.update(idempotencyKeys).set({ status: response.status, response: Buffer.from(response.body) })
          .where(and(eq(idempotencyKeys.keyHash, claim.keyHash), eq(idempotencyKeys.orgId, orgId))).run();
      });
    },
    async sweep(before) {
      let total = 0;
      for (;;) {
        const deleted = await write((tx) =>
          tx.$client
            .query(`DELETE FROM idempotency_keys WHERE key_hash IN (SELECT key_hash FROM idempotency_keys WHERE created_at < ? LIMIT ${SWEEP_BATCH})`)
            .run(before).changes,
        );
        total += deleted;
        if (deleted < SWEEP_BATCH) return total;
      }
    },
  };
}
