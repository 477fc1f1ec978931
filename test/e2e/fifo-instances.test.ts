/**
 * A FIFO listener on PostgreSQL with three instances claiming from one database (docs/delivery.md, "Pace and
 * order"): messages published through all of them arrive in publish order, and a kill -9 of the instance sending
 * the head sends that head again once its lease expires, with nothing behind it overtaking it. Needs the test
 * server (skipped without it, a failure under CI=true); it makes its own database whatever FANOUT_TEST_BACKEND says.
 */
import { afterAll, expect, test } from "bun:test";
import { startFanout, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";
import { createTestDatabase, postgresAvailable, withTestDatabase } from "../support/postgres.ts";
import { waitFor } from "../support/wait.ts";

const KEY = `fifo-key-${crypto.randomUUID()}`;
const ENV = { FANOUT_BOOTSTRAP_KEY: KEY, FANOUT_DELIVERY_TIMEOUT: "500ms", FANOUT_RETRY_SCHEDULE: "50ms,50ms,50ms", FANOUT_DB_POOL: "6" };
const MESSAGES = 300;

const instances: Fanout[] = [];
let receiver: Receiver | undefined;
afterAll(async () => {
  await Promise.all(instances.map((f) => f.stop()));
  receiver?.close();
});

test.if(await postgresAvailable())("three instances keep a FIFO line in order through a kill -9 of its sender", async () => {
  const database = await createTestDatabase();
  instances.push(...(await Promise.all([0, 1, 2].map(() => startFanout({ db: database.url, env: ENV })))));
  receiver = await Receiver.start();
  // Each answer after a few milliseconds, so a delivery is in flight when its sender is killed.
  receiver.answer("/notify", () => new Promise((resolve) => setTimeout(() => resolve(new Response("ok")), 5)));
  const api = deliveryApi(instances[0]!);
  const queue = await api.queue();
  const listener = (await api.call("POST", `/v1/queues/${queue}/listeners`, {
    name: "ledger", notify_url: receiver.notifyUrl, liveness_url: receiver.livenessUrl, ordering: "fifo",
  })).listener.id as string;

  // Published through every instance, 12 at a time.
  let next = 0;
  await Promise.all(Array.from({ length: 12 }, async () => {
    while (next < MESSAGES) {
      const n = next++;
      await deliveryApi(instances[n % 3]!).publish(queue, { n });
    }
  }));
  const order: string[] = [];
  for (let page = 1; order.length < MESSAGES; page++) {
    order.push(...(await api.call("GET", `/v1/queues/${queue}/messages?per_page=100&page=${page}`)).messages.map((m: { id: string }) => m.id));
  }

  // Once some have arrived, kill the instance whose worker holds the head's lease (its token names its pid).
  await waitFor(() => receiver!.deliveries().length >= 60, 30_000);
  const sender = await waitFor(() => withTestDatabase(database.url, async (sql) => {
    const [row] = await sql`SELECT d.lease_owner AS owner FROM deliveries d JOIN listeners l ON l.seq = d.listener_seq
      WHERE l.id = ${listener} AND d.state = 'sending'`;
    const pid = Number(/^w(\d+)-/.exec(row?.owner ?? "")?.[1]);
    return instances.find((f) => f.pid === pid);
  }), 10_000, () => "no delivery of the line was in flight");
  sender.kill();
  instances.splice(instances.indexOf(sender), 1);

  const ids = () => receiver!.deliveries().map((d) => JSON.parse(d.body).id as string);
  await waitFor(() => new Set(ids()).size === MESSAGES, 60_000, () => `${new Set(ids()).size} of ${MESSAGES} received`);
  // Duplicates are allowed (the killed head is sent again); reordering is not: first arrivals are in publish order.
  const first = [...new Set(ids())];
  expect(first).toEqual(order);
  // And each message arrived only once it was the head: nothing that came after it had arrived before.
  const seen = new Set<string>();
  for (const id of ids()) {
    if (!seen.has(id)) expect(order.indexOf(id)).toBe(seen.size);
    seen.add(id);
  }
}, 120_000);
