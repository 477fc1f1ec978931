/**
 * Conformance: Idempotency-Key records. A write whose actor carries a claim records the key in its own
 * transaction (so a crash after the commit leaves the key, without an answer); a refused write records none;
 * `complete` stores the answer, or records key and answer when no write claimed it; `find` is per organization
 * and within its `since` bound; the sweep deletes older records.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./backends.ts";
import type { Actor, IdempotencyClaim, Store } from "../../src/store/index.ts";

const T0 = 1_700_000_000_000;
const answer = (text: string) => ({ status: 200, body: new TextEncoder().encode(text) });
const claimOf = (keyHash: string, fingerprint = "f1"): IdempotencyClaim => ({ keyHash, fingerprint, claimed: false });
const actorWith = (claim: IdempotencyClaim): Actor => ({ keyId: "key_caller", keyName: "caller", idempotency: claim });

for (const backend of BACKENDS) {
  describe(`${backend.name} store: idempotency keys`, () => {
    let store: Store;
    let org: string;
    let other: string;
    beforeEach(async () => {
      store = await backend.open();
      org = (await store.orgs.create("com.example.a", T0)).id;
      other = (await store.orgs.create("com.example.b", T0)).id;
    });
    afterEach(async () => store.close());

    test("a write records its claim in its own transaction; complete adds the answer", async () => {
      const claim = claimOf("h-write");
      const q = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, T0, actorWith(claim));
      expect(claim.claimed).toBe(true);
      expect(await store.idempotency.find(org, "h-write", T0)).toEqual({ fingerprint: "f1", response: null, createdAt: T0 });
      // A second write of the same request does not claim again.
      await store.messages.publish(org, q.id, { name: null, data: "1" }, T0 + 5, actorWith(claim));
      expect((await store.idempotency.find(org, "h-write", T0))!.createdAt).toBe(T0);
      await store.idempotency.complete(org, claim, answer("first"), T0 + 10);
      const found = await store.idempotency.find(org, "h-write", T0);
      expect(found).toMatchObject({ fingerprint: "f1", createdAt: T0, response: { status: 200 } });
      expect(new TextDecoder().decode(found!.response!.body)).toBe("first");
    });

    test("a refused write records no key", async () => {
      const claim = claimOf("h-refused");
      await expect(store.messages.publish(org, "q_missing", { name: null, data: "1" }, T0, actorWith(claim))).rejects.toMatchObject({ status: 404 });
      expect(await store.idempotency.find(org, "h-refused", 0)).toBeNull();
    });

    test("complete without a claiming write records key and answer", async () => {
      const claim = claimOf("h-none");
      await store.idempotency.complete(org, claim, answer("a"), T0);
      expect(await store.idempotency.find(org, "h-none", T0)).toMatchObject({ fingerprint: "f1", createdAt: T0, response: { status: 200 } });
      // A claim whose write was rolled back (claimed, but no record) is recorded all the same.
      const lost = { ...claimOf("h-lost"), claimed: true };
      await store.idempotency.complete(org, lost, answer("b"), T0 + 1);
      expect(await store.idempotency.find(org, "h-lost", T0)).toMatchObject({ createdAt: T0 + 1, response: { status: 200 } });
    });

    test("find is per organization and ignores records made before `since`", async () => {
      await store.idempotency.complete(org, claimOf("h-scoped"), answer("a"), T0);
      expect(await store.idempotency.find(other, "h-scoped", 0)).toBeNull();
      expect(await store.idempotency.find(org, "h-scoped", T0)).not.toBeNull();
      expect(await store.idempotency.find(org, "h-scoped", T0 + 1)).toBeNull();
    });

    test("an expired record is replaced by the next claim", async () => {
      await store.idempotency.complete(org, claimOf("h-old", "old"), answer("old"), T0);
      const claim = claimOf("h-old", "new");
      await store.queues.create(org, { name: "q", schema: null, schemaId: null }, T0 + 100, actorWith(claim));
      expect(await store.idempotency.find(org, "h-old", T0 + 50)).toEqual({ fingerprint: "new", response: null, createdAt: T0 + 100 });
    });

    test("the sweep deletes records made before its bound and keeps the rest", async () => {
      for (let i = 0; i < 5; i++) await store.idempotency.complete(org, claimOf(`h-${i}`), answer(String(i)), T0 + i);
      expect(await store.idempotency.sweep(T0 + 3)).toBe(3);
      expect(await store.idempotency.find(org, "h-2", 0)).toBeNull();
      expect(await store.idempotency.find(org, "h-3", 0)).not.toBeNull();
      expect(await store.idempotency.sweep(T0 + 3)).toBe(0);
    });
  });
}
