/**
 * messages, deliveries and attempts have no foreign keys on PostgreSQL (schema.ts): deletes cascade by triggers,
 * and the statements that insert them lock what they hang from; a database made with the keys is upgraded in place.
 * Rows are counted here straight from the tables.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { openPostgresStore, type PostgresStore } from "./index.ts";
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../../test/support/postgres.ts";
import { waitFor } from "../../../test/support/wait.ts";
import type { ClaimedDelivery } from "../deliveries.ts";
import { migrations } from "./migrations.gen.ts";
import { applyMigrations } from "./migrations.ts";

const actor = { keyId: "k", keyName: "k" };
const request = { owner: "w", leaseMs: 10_000, limit: 256, perListener: 10_000, busy: new Map<number, number>() };

/** Rows whose parent is gone, and rows in all. */
async function census(store: PostgresStore) {
  const [row] = await store.client`SELECT
    (SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = m.queue_id))::int AS "orphanMessages",
    (SELECT count(*) FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.seq = d.message_seq)
      OR NOT EXISTS (SELECT 1 FROM listeners l WHERE l.seq = d.listener_seq))::int AS "orphanDeliveries",
    (SELECT count(*) FROM attempts a WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = a.delivery_id))::int AS "orphanAttempts",
    (SELECT count(*) FROM messages)::int AS messages, (SELECT count(*) FROM deliveries)::int AS deliveries,
    (SELECT count(*) FROM attempts)::int AS attempts`;
  return row as Record<string, number>;
}

const settle = (store: PostgresStore, claimed: ClaimedDelivery[], at: number) =>
  store.deliveries.complete(claimed.map((c) => ({ id: c.id, token: c.token, listenerSeq: c.listener.seq, listenerId: c.listener.id,
    messageId: c.message.id, attempt: 1, next: { state: "acknowledged" as const },
    record: { attemptedAt: at, statusCode: 200, durationMs: 1, error: null, response: null } })), at);

describe.if(await postgresAvailable())("deletes cascade without foreign keys", () => {
  let database: TestDatabase | undefined;
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
    await database?.drop();
  });
  const open = async () => {
    database ??= await createTestDatabase();
    const store = await openPostgresStore(database.url, { pool: 4, role: "test" });
    stores.push(store);
    return store;
  };

  test("a deleted message, listener, queue or organization takes the rows under it along", async () => {
    const store = await open();
    const org = (await store.orgs.create("com.example.cascade", 1)).id;
    const queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
    const listener = (name: string) =>
      store.listeners.create(org, queue.id, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: "http://127.0.0.1/l", secret: "s" }, 1, actor);
    const [one] = [await listener("one"), await listener("two")];
    const messages = [];
    for (let i = 0; i < 3; i++) messages.push(await store.messages.publish(org, queue.id, { name: null, data: String(i) }, 2 + i, actor));
    await settle(store, (await store.deliveries.claimDue(request, 10)).claimed, 10);
    const clean = { orphanMessages: 0, orphanDeliveries: 0, orphanAttempts: 0 };
    expect(await census(store)).toEqual({ ...clean, messages: 3, deliveries: 6, attempts: 6 });

    await store.messages.delete(org, queue.id, messages[0]!.id, 20, actor);
    expect(await census(store)).toEqual({ ...clean, messages: 2, deliveries: 4, attempts: 4 });
    await store.listeners.delete(org, queue.id, one!.id, 21, actor);
    expect(await census(store)).toEqual({ ...clean, messages: 2, deliveries: 2, attempts: 2 });
    await store.queues.delete(org, queue.id, 22, actor);
    expect(await census(store)).toEqual({ ...clean, messages: 0, deliveries: 0, attempts: 0 });

    const other = await store.queues.create(org, { name: "other", schema: null, schemaId: null }, 30, actor);
    await store.listeners.create(org, other.id, { name: "l", notifyUrl: "http://127.0.0.1/l", livenessUrl: "http://127.0.0.1/l", secret: "s" }, 30, actor);
    await store.messages.publish(org, other.id, { name: null, data: "1" }, 31, actor);
    await settle(store, (await store.deliveries.claimDue(request, 40)).claimed, 40);
    expect(await census(store)).toEqual({ ...clean, messages: 1, deliveries: 1, attempts: 1 });
    await store.client`DELETE FROM orgs WHERE id = ${org}`;
    expect(await census(store)).toEqual({ ...clean, messages: 0, deliveries: 0, attempts: 0 });
  });

  test("a database made before the triggers is upgraded in place: its rows stay, and deletes cascade through them", async () => {
    const before = await createTestDatabase();
    let store: PostgresStore | undefined;
    try {
      // The first migration alone, recorded as drizzle records it: the schema of a release that had foreign keys.
      const [first] = migrations;
      store = await openPostgresStore(before.url, { pool: 4, role: "test", migrate: false });
      await store.client.begin(async (tx) => {
        for (const stmt of first!.sql.split("--> statement-breakpoint")) if (stmt.trim()) await tx.unsafe(stmt);
        await tx`CREATE SCHEMA drizzle`;
        await tx`CREATE TABLE drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
        await tx`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('first', ${first!.when})`;
      });
      const keys = async () => (await store!.client`SELECT conname FROM pg_constraint
        WHERE contype = 'f' AND conrelid IN ('messages'::regclass, 'deliveries'::regclass, 'attempts'::regclass)`).length;
      expect(await keys()).toBe(4);
      // Rows as that release wrote them (today's code writes columns its schema lacks): five delivered messages.
      const org = "org_upgrade";
      await store.client.begin(async (tx) => {
        await tx`INSERT INTO orgs (id, name, created_at) VALUES (${org}, 'com.example.upgrade', 1)`;
        await tx`INSERT INTO queues (id, org_id, name, created_at) VALUES ('q_upgrade', ${org}, 'q', 1)`;
        const [l] = await tx`INSERT INTO listeners (id, org_id, queue_id, name, notify_url, liveness_url, secret, liveness_state, next_probe_at, created_at)
          VALUES ('lst_upgrade', ${org}, 'q_upgrade', 'l', 'http://127.0.0.1/n', 'http://127.0.0.1/l', 's', 'stable', 1, 1) RETURNING seq`;
        for (let i = 0; i < 5; i++) {
          const [m] = await tx`INSERT INTO messages (id, org_id, queue_id, data, created_at) VALUES (${`msg_upgrade${i}`}, ${org}, 'q_upgrade', ${String(i)}, ${2 + i}) RETURNING seq`;
          const [d] = await tx`INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, created_at, updated_at)
            VALUES (${org}, ${m.seq}, ${l.seq}, 'acknowledged', 1, 10, 10) RETURNING id`;
          await tx`INSERT INTO attempts (delivery_id, attempt, attempted_at, status_code, duration_ms) VALUES (${d.id}, 1, 10, 200, 1)`;
        }
      });
      const queue = { id: "q_upgrade" };

      expect(await applyMigrations(store.client)).toBe(migrations.length - 1);
      expect(await keys()).toBe(0);
      const clean = { orphanMessages: 0, orphanDeliveries: 0, orphanAttempts: 0 };
      expect(await census(store)).toEqual({ ...clean, messages: 5, deliveries: 5, attempts: 5 });
      await store.queues.delete(org, queue.id, 20, actor);
      expect(await census(store)).toEqual({ ...clean, messages: 0, deliveries: 0, attempts: 0 });
    } finally {
      await store?.close();
      await before.drop();
    }
  });

  test("publishes racing the deletes of their queue's listeners leave no delivery behind", async () => {
    // Two instances: one publishes, the other deletes listeners meanwhile. Each store runs its own writes in
    // order, so the race needs two.
    const [publisher, deleter] = [await open(), await open()];
    const org = (await publisher.orgs.create("com.example.race", 1)).id;
    const queue = await publisher.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
    const listeners = [];
    for (let i = 0; i < 40; i++) {
      listeners.push(await publisher.listeners.create(org, queue.id,
        { name: `l${i}`, notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "s" }, 1, actor));
    }
    let publishing = true;
    let rounds = 0;
    const publishes = (async () => {
      while (publishing) {
        await Promise.all(Array.from({ length: 8 }, (_, i) => publisher.messages.publish(org, queue.id, { name: null, data: String(i) }, 2 + rounds, actor)));
        rounds++;
      }
    })();
    for (const l of listeners) {
      const before = rounds;
      await deleter.listeners.delete(org, queue.id, l.id, 3, actor);
      // A round of publishes ends after each delete began: the two keep racing, on a busy machine too.
      await waitFor(() => rounds > before, 10_000, () => "the publishes stopped");
    }
    publishing = false;
    await publishes;
    const counts = await census(publisher);
    expect(counts.messages).toBeGreaterThan(0);
    expect(counts).toMatchObject({ orphanMessages: 0, orphanDeliveries: 0, deliveries: 0 });
  });
});
