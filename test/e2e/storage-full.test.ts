/**
 * A database that cannot be written, for real: the server's database sits on a small tmpfs that a
 * filler file fills to the brim while the server runs, then frees. While full: writes answer 503 with Retry-After
 * over HTTP/1.1 and HTTP/2, reads answer 200, /readyz says unavailable, the delivery worker pauses without dying
 * and keeps the results it has, and the cause is logged once. Once freed, without a restart: publishes and
 * /readyz answer 200, the results kept are settled, and every message answered 200 is delivered.
 *
 * A read-only remount cannot be tested this way: Linux refuses `mount -o remount,ro` (EBUSY) while a file on the
 * file system is open for writing, and SQLite keeps the database, its WAL and its -shm open so for as long as
 * the server runs. A file system the kernel itself turns read-only (after I/O errors) fails writes with EROFS,
 * which SQLite reports as an I/O error: the same path as here, whose mapping group-commit.test.ts covers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { PROTOS, startFanout, waitFor, type Fanout, type Reply } from "./harness.ts";
import { deliveryApi, receiverSet, type Receiver } from "./receiver.ts";
import { scrapeUntil, scrape } from "./prometheus.ts";
import { mountTmpfs } from "../tmpfs.ts";

const disk = mountTmpfs(8 * 1024 * 1024, "the full-disk test");
const receivers = receiverSet();
let fanout: Fanout | undefined;

afterAll(async () => {
  receivers.closeAll();
  await fanout?.stop();
  disk?.unmount(); // after the server: a lazy unmount would leave its files behind while it runs
});

const lines = (pattern: RegExp) => (fanout?.output() ?? "").split("\n").filter((l) => pattern.test(l));
const acknowledged = async (f: Fanout) => (await scrape(f)).sum("fanout_delivery_attempts_total", { outcome: "acknowledged" });

describe.skipIf(!disk)("a full disk", () => {
  let api: ReturnType<typeof deliveryApi>;
  let receiver: Receiver;
  let queue: string;
  let listener: string;
  const published: string[] = []; // every message answered 200
  let heldBack = ""; // the message whose receiver answers while the disk is full
  let answerHeld: () => void = () => {};

  beforeAll(async () => {
    fanout = await startFanout({ db: join(disk!.dir, "fanout.db"), env: { FANOUT_RETRY_SCHEDULE: "200ms" } });
    api = deliveryApi(fanout);
    receiver = await receivers.start();
    queue = await api.queue("orders");
    listener = (await api.listener(queue, "shop", receiver)).id;
  });

  const publish = (proto: "h1" | "h2", n: number) => fanout!.call(proto, "POST", `/v1/queues/${queue}/messages`, { body: { data: { n } } });

  test("before: publishes are delivered, and one receiver keeps its answer back", async () => {
    for (const proto of PROTOS) published.push((await publish(proto, published.length)).body.message.id);
    await receiver.waitForDeliveries(2);
    const release = Promise.withResolvers<Response>();
    answerHeld = () => release.resolve(new Response("ok"));
    receiver.answer("/notify", (req) => (req.body.includes('"n":99') ? release.promise : new Response("ok")));
    heldBack = (await publish("h1", 99)).body.message.id;
    published.push(heldBack);
    await receiver.waitForDeliveries(3);
    expect((await fanout!.call("h1", "GET", "/readyz", { key: null })).body).toEqual({ status: "ready" });
  });

  test("full: writes answer 503 with Retry-After, reads and /healthz 200, /readyz unavailable; the worker keeps its result", async () => {
    const f = fanout!;
    // Topped up while waiting: a checkpoint may give a little space back until the writes fail.
    await waitFor(async () => (disk!.fill(), (await f.call("h1", "GET", "/readyz", { key: null })).status === 503), 10_000,
      () => "/readyz never said unavailable");
    const ready = await f.call("h2", "GET", "/readyz", { key: null });
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: "unavailable", detail: expect.stringContaining("disk full") });
    expect(ready.headers.get("retry-after")).toBe("5");
    const refused: Reply[] = [];
    for (const proto of PROTOS) {
      for (let i = 0; i < 10; i++) refused.push(await publish(proto, 1000 + i));
      refused.push(await f.call(proto, "POST", "/v1/queues", { body: { name: `q-${proto}` } }));
    }
    for (const reply of refused) {
      expect(reply.status).toBe(503);
      expect(reply.headers.get("retry-after")).toBe("5");
      expect(reply.body).toEqual({ title: "Service Unavailable", status: 503, detail: "The database cannot be written now (disk full); try again later." });
    }
    for (const proto of PROTOS) {
      expect((await f.call(proto, "GET", `/v1/queues/${queue}/messages`)).status).toBe(200);
      expect((await f.call(proto, "GET", "/healthz", { key: null })).status).toBe(200);
    }
    // The receiver acknowledges now; the worker cannot write that down and keeps it (its attempt is counted).
    const before = await acknowledged(f);
    answerHeld();
    await scrapeUntil(f, (m) => m.sum("fanout_delivery_attempts_total", { outcome: "acknowledged" }) > before, "the held answer was not counted");
    expect((await api.message(queue, heldBack)).deliveries[0]).toMatchObject({ state: "sending", attempts: 0 });
    expect(lines(/storage error/)).toHaveLength(1);
    expect(lines(/storage error/)[0]).toContain("disk full");
  });

  test("freed: everything works again without a restart, and every message answered 200 is delivered", async () => {
    const f = fanout!;
    disk!.free();
    await waitFor(async () => (await f.call("h1", "GET", "/readyz", { key: null })).status === 200, 10_000, () => "/readyz never said ready");
    for (const proto of PROTOS) {
      const reply = await publish(proto, 2000 + published.length);
      expect(reply.status).toBe(200);
      published.push(reply.body.message.id);
    }
    // The answer given while full is settled, once: no second delivery of it.
    const settled = await api.settled(queue, heldBack, listener, "acknowledged");
    expect(settled).toMatchObject({ attempts: 1, last_status: 200 });
    await waitFor(() => published.every((id) => receiver.deliveries().some((d) => d.headers["webhook-id"] === id)), 10_000,
      () => `not delivered: ${published.filter((id) => !receiver.deliveries().some((d) => d.headers["webhook-id"] === id))}`);
    expect(receiver.deliveries().filter((d) => d.headers["webhook-id"] === heldBack)).toHaveLength(1);
    await waitFor(() => lines(/storage recovered/).length > 0, 10_000, () => "no recovery logged");
    expect(lines(/storage recovered/)).toHaveLength(1);
    expect(lines(/storage error/)).toHaveLength(1);
    expect(lines(/delivery worker (exited|failed)|unexpected error/)).toEqual([]);
  });

  test("stopped, the database and its WAL pass SQLite's integrity check", async () => {
    expect(await fanout!.stop()).toBe(0);
    const db = new Database(join(disk!.dir, "fanout.db"), { readonly: true });
    try {
      expect(db.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
      const stored = db.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n;
      expect(stored).toBe(published.length);
    } finally {
      db.close();
    }
  });
});
