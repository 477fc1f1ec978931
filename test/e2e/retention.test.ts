/**
 * Retention (docs/operations.md) through the real server: final messages older than the retention go with their
 * deliveries and attempts; a message with a delivery still pending or held stays until that delivery is final;
 * a message without listeners is final at once. Listener counters keep what they counted. The database file stops
 * growing under a steady load once the window is full, because freed pages are reused.
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { BACKEND, cli, startFanout, waitFor, type Fanout } from "./harness.ts";
import { withTestDatabase } from "../support/postgres.ts";
import { deliveryApi, receiverSet } from "./receiver.ts";

const receivers = receiverSet();
const servers: Fanout[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  receivers.closeAll();
});

/** What the messages take on disk: the SQLite file, or the messages table on PostgreSQL (the database holds more). */
async function storedBytes(db: string): Promise<number> {
  if (BACKEND === "sqlite") return statSync(db).size;
  return withTestDatabase(db, async (sql) => Number((await sql`SELECT pg_total_relation_size('messages') AS n`)[0].n));
}

async function server(env: Record<string, string>): Promise<Fanout> {
  const s = await startFanout({ env: { FANOUT_RATE_LIMIT: "0", ...env } });
  servers.push(s);
  return s;
}

test("final messages older than the retention go; held and pending ones stay; counters stay", async () => {
  const fanout = await server({ FANOUT_RETENTION: "1s", FANOUT_RETRY_SCHEDULE: "1h" });
  const api = deliveryApi(fanout, "h2");
  const [fast, slow] = [await receivers.start(), await receivers.start()];
  const q = await api.queue();
  const acks = await api.listener(q, "acks", fast);
  const paused = await api.listener(q, "paused", slow);
  await api.call("PUT", `/v1/queues/${q}/listeners/${paused.id}`, { enabled: false });
  const lonely = await api.queue();

  const kept = await api.publish(q, { kept: true }); // acknowledged by one listener, held for the other
  const quiet = await api.publish(lonely, { listeners: 0 }); // final once fanned out
  await api.settled(q, kept, acks.id, "acknowledged");
  const exists = async (queue: string, id: string) => (await fanout.call("h1", "GET", `/v1/queues/${queue}/messages/${id}`)).status;
  await waitFor(async () => (await exists(lonely, quiet)) === 404, 10_000, () => "the message without listeners was never swept");
  expect(await exists(q, kept)).toBe(200);

  // Once its last delivery is final (here: acknowledged after resuming), it goes too; the sweep may take it as
  // soon as it is acknowledged, so what is watched is its arrival, then its deletion.
  await api.call("PUT", `/v1/queues/${q}/listeners/${paused.id}`, { enabled: true });
  await slow.waitForDeliveries(1);
  await waitFor(async () => (await exists(q, kept)) === 404, 10_000, () => "the final message was never swept");
  expect((await api.listenerView(q, acks.id)).messages.acknowledged_count).toBe(1);
  expect((await api.listenerView(q, paused.id)).messages.acknowledged_count).toBe(1);
  expect(fanout.output()).toContain("retention sweep deleted old messages");
}, 40_000);

// SQLite's own file reusing its freed pages; on PostgreSQL, reusing the space of deleted rows is (auto)vacuum's work.
test.if(BACKEND === "sqlite")("under a steady publish and deliver load the database file stops growing once the window is full", async () => {
  const fanout = await server({ FANOUT_RETENTION: "2s" });
  const api = deliveryApi(fanout, "h2");
  const r = await receivers.start();
  const q = await api.queue();
  await api.listener(q, "steady", r);
  const data = { pad: "x".repeat(2_000) };
  const sizes: number[] = [];
  // The database's own size as its last commit left it (pages in the WAL included), not the files': those also
  // move with how far the checkpoints have got.
  const size = () => {
    const db = new Database(fanout.dbPath, { readonly: true });
    try {
      return db.query<{ n: number }, []>("SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()").get()!.n;
    } finally {
      db.close();
    }
  };
  // 12 rounds of one second, each publishing 200 messages: 6 retention windows.
  for (let round = 0; round < 12; round++) {
    const started = Date.now();
    await Promise.all(Array.from({ length: 200 }, () => api.publish(q, data)));
    await Bun.sleep(Math.max(0, 1_000 - (Date.now() - started)));
    sizes.push(size());
  }
  // Without retention the file grows by about a round's pages every round (200 messages of 2 KB, over 4 KB each
  // with their deliveries and attempts), as much in the last six rounds as in the first; the first two rounds
  // show how much, since no message is old enough to go before the third. With retention the last rounds reuse
  // pages and grow by the usage events, which are kept for 24 hours (about 50 KB a round), and by what a sweep
  // yielding to the publishes has not deleted yet: on a loaded machine once about a round's worth.
  const perRound = (sizes[2]! - sizes[0]!) / 2;
  const grownLate = sizes[11]! - sizes[5]!;
  expect({ sizes, grownLate: grownLate < 2 * perRound }).toEqual({ sizes, grownLate: true });
}, 60_000);

test("fanout compact gives the space of deleted messages back, and refuses while a server holds the file", async () => {
  const fanout = await server({ FANOUT_RETENTION: "1s" });
  const api = deliveryApi(fanout, "h1");
  const q = await api.queue(); // no listeners: its messages are final at once
  const pad = "y".repeat(8_000);
  await Promise.all(Array.from({ length: 300 }, () => api.publish(q, { pad })));
  const listed = async () => (await fanout.call("h1", "GET", `/v1/queues/${q}/messages`)).headers.get("x-total-count");
  await waitFor(async () => (await listed()) === "0", 15_000, () => "the messages were never swept");
  const refused = await cli(["compact"], { FANOUT_DB: fanout.dbPath });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("stop the server");
  expect(await fanout.stop()).toBe(0);
  servers.splice(servers.indexOf(fanout), 1);
  const before = await storedBytes(fanout.dbPath);
  const done = await cli(["compact"], { FANOUT_DB: fanout.dbPath });
  expect(done.code).toBe(0);
  expect(done.stdout).toContain("compacted");
  const after = await storedBytes(fanout.dbPath);
  expect({ before, after, shrank: after < before / 2 }).toEqual({ before, after, shrank: true });
}, 60_000);
