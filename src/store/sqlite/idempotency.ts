/**
 * Idempotency-Key records (store/index.ts IdempotencyStore). The record is made by the request's first write, in
 * that write's transaction (`claimKey`, called beside the write's usage event): a change and its key commit
 * together, so a retry after a crash between the commit and the answer finds the key. The answer is stored once
 * it is rendered (`complete`).
 */
import type { Conn, Raw } from "./shared.ts";
import type { Actor, IdempotencyStore } from "../index.ts";

const SWEEP_BATCH = 2_000;

/** Records the request's key in the current write transaction, once per request. An expired record is replaced. */
export function claimKey(tx: Raw, orgId: string, actor: Actor | null, now: number): void {
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
      // Once per request that carries a key: bun:sqlite's statement cache rather than a query built each time.
      const row = db.$client
        .query("SELECT fingerprint, status, response, created_at AS createdAt FROM idempotency_keys WHERE key_hash = ? AND org_id = ? AND created_at >= ?")
        .get(keyHash, orgId, since) as { fingerprint: string; status: number | null; response: Uint8Array | null; createdAt: number } | null;
      if (!row) return null;
      const response = row.status !== null && row.response !== null ? { status: row.status, body: new Uint8Array(row.response) } : null;
      return { fingerprint: row.fingerprint, response, createdAt: row.createdAt };
    },
    async complete(orgId, claim, response, now) {
      const body = Buffer.from(response.body);
      await write((tx) => {
        // A claimed record keeps its time; one whose claiming write rolled back (or none was made) is recorded now.
        if (claim.claimed) {
          const { changes } = tx.$client
            .query("UPDATE idempotency_keys SET status = ?, response = ? WHERE key_hash = ? AND org_id = ? AND fingerprint = ?")
            .run(response.status, body, claim.keyHash, orgId, claim.fingerprint);
          if (changes > 0) return;
        }
        tx.$client
          .query(`INSERT INTO idempotency_keys (key_hash, org_id, fingerprint, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (key_hash) DO UPDATE SET org_id = excluded.org_id, fingerprint = excluded.fingerprint, status = excluded.status,
              response = excluded.response, created_at = excluded.created_at`)
          .run(claim.keyHash, orgId, claim.fingerprint, response.status, body, now);
        claim.claimed = true;
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
