/**
 * One server per database file: a second `serve` on the same file refuses to start and names the first, CLI
 * commands still work beside it, and a server starting after a crash sends the dead one's deliveries again at
 * once instead of after their leases expire. The files that hold secrets are private (0600).
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT, cli, startFanout, tempDir, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function started(opts: Parameters<typeof startFanout>[0]): Promise<Fanout> {
  const fanout = await startFanout(opts);
  cleanups.push(() => fanout.stop());
  return fanout;
}

test("a second server on the same file refuses to start and names the first; CLI commands work beside it", async () => {
  const first = await started({});
  const second = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "serve"], {
    env: { ...process.env, ...first.env, FANOUT_PORT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = await new Response(second.stderr).text();
  expect(await second.exited).toBe(1);
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).toContain("another fanout server is serving");
  expect(stderr).toMatch(/pid \d+/);
  const made = await cli(["orgs", "create", `com.example.beside-${crypto.randomUUID().slice(0, 8)}`], { FANOUT_DB: first.dbPath });
  expect(made.code).toBe(0);
  expect((await first.call("h1", "GET", "/v1/queues")).status).toBe(200);
});

test("the database, its WAL and shared memory, and a backup are private to their owner", async () => {
  const fanout = await started({});
  expect((await fanout.call("h2", "POST", "/v1/queues", { body: { name: "private" } })).status).toBe(200);
  const backup = join(tempDir(), "copy.db");
  expect((await cli(["backup", backup], { FANOUT_DB: fanout.dbPath })).code).toBe(0);
  // The WAL exists between checkpoints only; the others always do.
  const files = [fanout.dbPath, `${fanout.dbPath}-shm`, `${fanout.dbPath}.server-lock`, backup];
  if (existsSync(`${fanout.dbPath}-wal`)) files.push(`${fanout.dbPath}-wal`);
  for (const file of files) expect({ file, mode: (statSync(file).mode & 0o777).toString(8) }).toEqual({ file, mode: "600" });
});

test("after kill -9, deliveries that were in flight are sent again within seconds, not after their leases expire", async () => {
  const r = await Receiver.start();
  cleanups.push(() => r.close());
  // The first server's requests hang, so its deliveries are leased (for 4 × 15 s + 5 s by default) when it dies.
  r.answer("/notify", (_, index) => (index < 3 ? "hang" : new Response("ok")));
  const first = await startFanout({});
  const api = deliveryApi(first);
  const queue = await api.queue();
  await api.listener(queue, "in-flight", r);
  const ids = [await api.publish(queue, 1), await api.publish(queue, 2), await api.publish(queue, 3)];
  await r.waitForDeliveries(3);
  first.kill();

  await started({ db: first.dbPath, env: { FANOUT_BOOTSTRAP_KEY: first.key } });
  const again = () => r.deliveries().slice(3).map((d) => d.headers["webhook-id"]);
  await waitFor(() => ids.every((id) => again().includes(id)), 10_000, () => `sent again: ${again().join(", ")} of ${ids.join(", ")}`);
}, 40_000);
