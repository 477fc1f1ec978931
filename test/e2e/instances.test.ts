/**
 * Several instances on one PostgreSQL database (docs/postgres.md), started together: publishes spread over them are
 * delivered at least once in total, not once per instance; a kill -9 of one while deliveries are in flight loses
 * nothing answered 200 (another takes its periodic work over and gives its leases back once they expire); a lockout
 * taken through one instance holds on the others; periodic work runs on one instance at a time. Needs the test server (skipped without it,
 * a failure under CI=true); it makes its own database whatever FANOUT_TEST_BACKEND says.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";
import { createTestDatabase, postgresAvailable, withTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { LOCK_NAMESPACE, LOCKS } from "../../src/store/postgres/locks.ts";

const KEY = `instances-key-${crypto.randomUUID()}`;
const ENV = {
  FANOUT_BOOTSTRAP_KEY: KEY, FANOUT_DELIVERY_TIMEOUT: "500ms", FANOUT_RETRY_SCHEDULE: "100ms,200ms",
  FANOUT_LIVENESS_INTERVAL: "300ms", FANOUT_LOCKOUT: "3/1m:1m", FANOUT_TRUST_PROXY: "on", FANOUT_DB_POOL: "6",
  // Two requests in flight per listener: each worker then holds claimed rows it has not sent yet (its ready list).
  FANOUT_LISTENER_CONCURRENCY: "2",
};
/** What one worker may hold for one listener (its cap and ready list, loop.ts): the most a kill can leave to send again. */
const HELD_PER_LISTENER = 2 * 4;

describe.if(await postgresAvailable())("three instances on one PostgreSQL database", () => {
  let instances: Fanout[] = [];
  let receiver: Receiver;
  let queue: string;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const { url } = database;
    instances = await Promise.all([0, 1, 2].map(() => startFanout({ db: url, env: ENV })));
    receiver = await Receiver.start();
    const api = deliveryApi(instances[0]!);
    queue = await api.queue();
    await api.listener(queue, "everyone", receiver);
  });
  afterAll(async () => {
    await Promise.all(instances.map((f) => f.stop()));
    receiver?.close();
  });

  const ids = () => receiver.deliveries().map((d) => d.headers["webhook-id"]!);
  /** The pids of the instances whose leader session holds `lock` (leader.ts puts its pid in the session's name). */
  const holders = (lock: number) =>
    withTestDatabase(database.url, async (sql) => {
      const rows = await sql`SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.classid = ${LOCK_NAMESPACE} AND l.objid = ${lock} AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
      return rows.map((r: { name: string }) => Number(r.name.match(/pid (\d+)/)?.[1]));
    });

  /** Publishes `count` messages, round robin over the live instances, `parallel` at a time; the ids answered 200. */
  async function publish(count: number, parallel: number, onAnswered: (n: number) => void = () => {}): Promise<string[]> {
    const answered: string[] = [];
    let next = 0;
    const publisher = async () => {
      while (next < count) {
        const n = next++;
        const fanout = instances[n % instances.length]!;
        const reply = await fanout.call(n % 2 ? "h2" : "h1", "POST", `/v1/queues/${queue}/messages`, { body: { data: { n } } }).catch(() => null);
        if (!reply || reply.status === 0) continue; // its instance was killed under it: never answered, nothing promised
        if (reply.status !== 200) throw new Error(`publish answered ${reply.status}: ${reply.text}`);
        answered.push(reply.body.message.id);
        onAnswered(answered.length);
      }
    };
    await Promise.all(Array.from({ length: parallel }, publisher));
    return answered;
  }

  test("all three serve, and the one organization was made once", async () => {
    const keys = instances.map((f) => f.output().match(/owner key:/g)?.length ?? 0);
    expect(keys.reduce((a, b) => a + b, 0)).toBe(0); // a given key is never printed
    const made = instances.filter((f) => /organization: local\.fanout/.test(f.output()));
    expect(made).toHaveLength(1);
    for (const f of instances) expect((await f.call("h1", "GET", `/v1/queues/${queue}`)).status).toBe(200);
  });

  test("publishes spread over the instances are each delivered once in total", async () => {
    const answered = await publish(300, 12);
    const sent = new Set(answered);
    await waitFor(() => ids().filter((id) => sent.has(id)).length >= sent.size || undefined, 30_000,
      () => `${sent.size - new Set(ids()).size} of ${sent.size} messages never arrived`);
    const mine = ids().filter((id) => sent.has(id));
    expect(new Set(mine).size).toBe(sent.size);
    expect(mine.length - sent.size).toBe(0); // claims under FOR UPDATE SKIP LOCKED: none taken twice
  }, 60_000);

  test("a lockout taken through two instances holds on the third", async () => {
    const from = { "x-forwarded-for": "198.51.100.23" };
    const bad = (f: Fanout) => f.call("h1", "GET", "/v1/queues", { key: "not-a-key", headers: from });
    expect((await bad(instances[0]!)).status).toBe(401);
    expect((await bad(instances[1]!)).status).toBe(401);
    expect((await bad(instances[1]!)).status).toBe(401); // the third failure locks the address
    const third = instances[2]!;
    const refused = await waitFor(async () => {
      const r = await third.call("h1", "GET", "/v1/queues", { headers: from }); // a valid key
      return r.status === 403 && r;
    }, 5_000, () => "the third instance never refused the locked address");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await third.call("h1", "GET", "/v1/queues")).status).toBe(200); // other addresses are not locked
  });

  test("periodic work runs on one instance at a time: one session holds each task's lock", async () => {
    expect(await holders(LOCKS.deliveryHousekeeping)).toHaveLength(1);
    expect(await holders(LOCKS.sweeps)).toHaveLength(1);
  });

  test("a kill -9 of one instance while deliveries are in flight loses nothing answered 200", async () => {
    // A slow listener keeps every worker's requests in flight and its ready list full, the killed one's included.
    receiver.answer("/notify", () => Bun.sleep(100).then(() => new Response("ok")));
    const before = new Set(ids());
    // The instance that runs the delivery housekeeping: the others must take it over to rescue its leases.
    const [leader] = await holders(LOCKS.deliveryHousekeeping);
    const victim = instances.find((f) => f.pid === leader)!;
    let killed: Promise<number> | undefined;
    const answered = await publish(120, 12, (n) => {
      if (n !== 60) return;
      victim.kill();
      instances = instances.filter((f) => f !== victim);
      // Rows the dead worker had leased: nobody may send them until their leases expire.
      killed = withTestDatabase(database.url, async (sql) =>
        Number((await sql`SELECT count(*) AS n FROM deliveries WHERE state = 'sending' AND starts_with(lease_owner, ${`w${victim.pid}-`})`)[0].n));
    });
    expect(instances).toHaveLength(2);
    expect(await killed).toBeGreaterThan(0);
    const sent = new Set(answered);
    // The killed worker's leases expire (4 delivery timeouts and a margin); the surviving leader gives them back.
    await waitFor(() => answered.every((id) => ids().includes(id)) || undefined, 40_000,
      () => `${answered.filter((id) => !ids().includes(id)).length} of ${answered.length} answered messages never arrived`);
    const duplicates = ids().filter((id) => sent.has(id) && !before.has(id)).length - sent.size;
    expect(duplicates).toBeLessThanOrEqual(HELD_PER_LISTENER);
    const orphaned = await withTestDatabase(database.url, (sql) => sql`SELECT count(*) AS n FROM deliveries WHERE state = 'sending' AND starts_with(lease_owner, ${`w${victim.pid}-`})`);
    expect(Number(orphaned[0].n)).toBe(0); // every lease of the dead worker was taken over
    const [successor] = await holders(LOCKS.deliveryHousekeeping);
    expect(instances.map((f) => f.pid)).toContain(successor!);
    // Probes go on, from the new leader.
    const probes = receiver.probes().length;
    await waitFor(() => receiver.probes().length > probes + 2 || undefined, 5_000, () => "liveness probes stopped");
  }, 90_000);
});
