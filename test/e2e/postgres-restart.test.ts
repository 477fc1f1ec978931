/**
 * A PostgreSQL restart under a running fanout, on a private server (test/support/private-postgres.ts): writes
 * answer 503 with Retry-After while it is down (and /readyz says so), one log line says so, and fanout recovers
 * without a restart of its own, delivering what was published before and after, and says that in one line too.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";
import { PrivatePostgres, privatePostgresAvailable } from "../support/private-postgres.ts";

describe.if(privatePostgresAvailable())("a PostgreSQL restart while serving", () => {
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("writes answer 503 with Retry-After while the database is down, and everything works again once it is back", async () => {
    const pg = await PrivatePostgres.start();
    cleanups.push(() => pg.destroy());
    const receiver = await Receiver.start();
    cleanups.push(() => receiver.close());
    const fanout: Fanout = await startFanout({ db: pg.url, env: { FANOUT_RETRY_SCHEDULE: "100ms", FANOUT_DELIVERY_TIMEOUT: "1s" } });
    cleanups.push(() => fanout.stop());
    const api = deliveryApi(fanout);
    const queue = await api.queue();
    await api.listener(queue, "l", receiver);
    const before = await api.publish(queue, { n: 1 });
    await receiver.waitForDeliveries(1);

    await pg.stopServer();
    for (const proto of ["h1", "h2"] as const) {
      const write = await fanout.call(proto, "POST", `/v1/queues/${queue}/messages`, { body: { data: { n: 2 } } });
      expect(write.status).toBe(503);
      expect(write.headers.get("retry-after")).toBe("5");
      expect(write.body).toMatchObject({ status: 503 });
      expect(write.text).not.toContain("postgres://");
    }
    expect((await fanout.call("h1", "GET", "/healthz", { key: null })).status).toBe(200);
    const ready = await fanout.call("h1", "GET", "/readyz", { key: null });
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: "unavailable" });

    await pg.startServer();
    const after = await waitFor(async () => {
      const r = await fanout.call("h1", "POST", `/v1/queues/${queue}/messages`, { body: { data: { n: 3 } } });
      return r.status === 200 && (r.body.message.id as string);
    }, 15_000, () => `publishing never recovered:\n${fanout.output()}`);
    // The delivery worker recovered too (its pool, its LISTEN, its leader session), without a restart of fanout.
    await waitFor(() => receiver.deliveries().some((d) => d.headers["webhook-id"] === after) || undefined, 15_000,
      () => `the message published after the restart was never delivered:\n${fanout.output()}`);
    expect(receiver.deliveries().filter((d) => d.headers["webhook-id"] === before)).toHaveLength(1);
    expect(fanout.output()).not.toMatch(/delivery worker exited|restarting it/);
    // One line for the outage however many requests and threads met it, one for its end (store/outage.ts).
    await waitFor(() => fanout.output().includes("storage recovered: database unreachable") || undefined, 10_000,
      () => `no recovery line:\n${fanout.output()}`);
    expect(fanout.output().match(/storage error: database unreachable/g)).toHaveLength(1);
    // /readyz keeps its last answer for a second (READY_FOR_MS): the 503 above may still be that answer.
    await waitFor(async () => (await fanout.call("h1", "GET", "/readyz", { key: null })).status === 200 || undefined, 5_000,
      () => "/readyz never answered 200 again");
  }, 60_000);
});
