/**
 * A FIFO line takes its oldest pending message as its head, so on PostgreSQL the publishes of a queue with a FIFO
 * listener must commit in the order of their messages' seq (publish.ts): a later message committed while an
 * earlier one is still being written would otherwise be sent first. Here one instance's publish is held inside
 * its statement, after its message took its seq, by a transaction that already wrote the delivery the publish is
 * about to write (the seq its message will take is the sequence's next); another instance publishes meanwhile.
 */
import { afterAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { openPostgresStore, type PostgresStore } from "./index.ts";
import { createTestDatabase, postgresAvailable, type TestDatabase } from "../../../test/support/postgres.ts";
import { waitFor } from "../../../test/support/wait.ts";
import type { Actor } from "../index.ts";

const actor: Actor = { keyId: "k", keyName: "k" };
const request = { owner: "w", leaseMs: 10_000, limit: 256, perListener: 64, holdPerRequest: 4, busy: new Map<number, number>() };

let database: TestDatabase | undefined;
const stores: PostgresStore[] = [];
let blocker: SQL | undefined;
afterAll(async () => {
  await blocker?.close({ timeout: 0 });
  for (const store of stores) await store.close();
  await database?.drop();
});

test.if(await postgresAvailable())("a FIFO line's later message is not sent while an earlier one is still being published", async () => {
  database = await createTestDatabase();
  const [one, two] = [await openPostgresStore(database.url, { pool: 2, role: "test" }), await openPostgresStore(database.url, { pool: 2, role: "test", migrate: false })];
  stores.push(one!, two!);
  const org = (await one!.orgs.create("com.example.fifo", 1)).id;
  const queue = await one!.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
  const line = await one!.listeners.create(org, queue.id,
    { name: "ledger", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "s", ordering: "fifo" }, 1, actor);

  // The blocker writes the first message's delivery and keeps its transaction open: the publish waits on it there.
  blocker = new SQL({ url: database.url, max: 1 });
  const reserved = await blocker.reserve();
  const [{ next, seq }] = await reserved`SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next,
    (SELECT seq FROM listeners WHERE id = ${line.id}) AS seq FROM messages_seq_seq`;
  await reserved`BEGIN`;
  await reserved`INSERT INTO deliveries (org_id, message_seq, listener_seq, state, created_at, updated_at)
    VALUES (${org}, ${next}, ${seq}, 'acknowledged', 1, 1)`;
  const waiting = () => reserved`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;

  const first = one!.messages.publish(org, queue.id, { name: "first", data: "1" }, 2, actor);
  await waitFor(async () => (await waiting())[0].n === 1, 10_000, () => "the first publish never waited for its delivery");
  let secondDone = false;
  const second = two!.messages.publish(org, queue.id, { name: "second", data: "2" }, 3, actor).then((m) => (secondDone = true, m));
  // The second either commits (its message after the first's seq) or waits behind the first; either way, settle.
  await waitFor(async () => secondDone || (await waiting())[0].n === 2, 10_000, () => "the second publish neither finished nor waited");

  // Nothing of the line may start while its oldest message is uncommitted.
  expect((await two!.deliveries.claimDue(request, 10)).claimed.map((c) => c.message.name)).toEqual([]);

  await reserved`ROLLBACK`;
  reserved.release();
  await Promise.all([first, second]);
  expect((await two!.deliveries.claimDue(request, 10)).claimed.map((c) => c.message.name)).toEqual(["first"]);
}, 30_000);
