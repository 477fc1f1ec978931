// The supervisor with the real worker thread (no HTTP server) and with a stand-in worker that dies.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { join } from "node:path";
import { loadConfig, type Config } from "../config.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import type { Fields, Logger } from "../lib/log.ts";
import { drainBudget, startDelivery, workerEntry, type DeliveryHandle } from "./supervisor.ts";
import { DeliveryTally } from "../metrics/deliveries.ts";
import { tempFolder } from "../../test/support/temp.ts";
import { waitFor } from "../../test/support/wait.ts";

const actor = { keyId: "k", keyName: "k" };
type Line = { level: string; msg: string; fields?: Fields };

let store: SqliteStore;
let lines: Line[];
let log: Logger;
let handle: DeliveryHandle | undefined;
let receiver: ReturnType<typeof Bun.serve>;
let answer: () => Response | Promise<Response>;
let received: string[];

const configWith = (env: Record<string, string>): Config =>
  loadConfig({ FANOUT_ALLOW_TARGETS: "127.0.0.1/32", FANOUT_LIVENESS_INTERVAL: "1h", ...env }, ["serve"]).config;
/** For a wait's failure: what the worker logged. */
const theLog = () => `condition not met; log: ${JSON.stringify(lines)}`;

async function publishToReceiver(): Promise<{ queue: string; org: string; message: string }> {
  const org = (await store.orgs.create("com.example.sup", 1)).id;
  const queue = (await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor)).id;
  const url = `http://127.0.0.1:${receiver.port}/notify`;
  await store.listeners.create(org, queue, { name: "l", notifyUrl: url, livenessUrl: url, secret: "whsec_AAAA" }, Date.now(), actor);
  const message = (await store.messages.publish(org, queue, { name: null, data: "1" }, Date.now(), actor)).id;
  return { org, queue, message };
}

beforeEach(() => {
  store = openSqliteStore(join(tempFolder("fanout-sup-"), "db.db"), { durability: "normal" });
  lines = [];
  const record = (level: string) => (msg: string, fields?: Fields) => void lines.push({ level, msg, fields });
  log = { info: record("info"), warn: record("warn"), error: record("error") };
  received = [];
  answer = () => new Response("ok");
  receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (r) => {
    if (r.method !== "POST") return new Response("alive");
    received.push(await r.text());
    return answer();
  } });
});
afterEach(async () => {
  await handle?.stop();
  handle = undefined;
  receiver.stop(true);
  await store.close();
});

test("the worker delivers a published message on a nudge, and stop closes it cleanly", async () => {
  const { org, queue, message } = await publishToReceiver();
  const tally = new DeliveryTally();
  const batches: unknown[] = [];
  const observer = { batch: (b: Parameters<DeliveryTally["add"]>[0]) => (batches.push(b), tally.add(b)), restarted: () => {} };
  handle = startDelivery({ dbPath: store.path, config: configWith({}), log, version: "test", observer });
  handle.nudge();
  await waitFor(async () => (await store.messages.deliveries(org, queue, message))[0]?.state === "acknowledged", 10_000, theLog);
  expect(received).toHaveLength(1);
  await handle.stop();
  expect(lines.filter((l) => l.level !== "info")).toEqual([]);
  // The attempt reached the main thread in a batch, by the latest at the stop, with its answer time.
  expect(batches.length).toBeGreaterThanOrEqual(1);
  expect(tally.attempts.get(org)?.get("acknowledged")).toBe(1);
  expect(tally.durations.get(org)?.count).toBe(1);
  expect(tally.toAcknowledged.get(org)?.count).toBe(1);
});

test("stop is bounded: a send that outlasts the drain time is given back for the next start", async () => {
  answer = () => new Promise(() => {});
  const { org, queue, message } = await publishToReceiver();
  // The part of the bound kept after the drain (drainBudget) must cover giving the lease back on a loaded machine.
  handle = startDelivery({ dbPath: store.path, config: configWith({ FANOUT_SHUTDOWN_TIMEOUT: "3s" }), log, version: "test" });
  await waitFor(() => received.length === 1, 10_000, theLog);
  await handle.stop();
  const [delivery] = await store.messages.deliveries(org, queue, message);
  expect(delivery).toMatchObject({ state: "pending", attempts: 0 });
  // The worker gave up the send at its drain time and said so; the supervisor did not have to end it.
  expect(lines.some((l) => l.msg === "delivery worker drained" && l.fields?.abandoned === 1)).toBe(true);
  expect(lines.filter((l) => l.level !== "info")).toEqual([]);
});

test("a worker that dies is restarted, says so in the log, and its successor frees its leases", async () => {
  const workerUrl = new URL("./testing/dying-worker.ts", import.meta.url).href;
  let restarts = 0;
  const observer = { batch: () => {}, restarted: () => void restarts++ };
  handle = startDelivery({ dbPath: store.path, config: configWith({}), log, version: "test", workerUrl, observer });
  await waitFor(() => lines.filter((l) => l.msg === "started").length >= 2, 10_000, theLog);
  expect(restarts).toBeGreaterThanOrEqual(1);
  const [first, second] = lines.filter((l) => l.msg === "started");
  expect(second!.fields!.release).toBe(first!.fields!.owner as string);
  expect(lines).toContainEqual({ level: "error", msg: "delivery worker exited; restarting it", fields: { worker: first!.fields!.owner, code: 3, restart_in_ms: 250 } });
});

test("the drain budget leaves part of the shutdown bound for writing results and closing", () => {
  expect(drainBudget(10_000)).toBe(8_000);
  expect(drainBudget(400)).toBe(300);
  expect(drainBudget(0)).toBe(0);
});

test("the worker entry is beside this file from source, and under delivery/ inside a compiled binary", () => {
  expect(workerEntry("file:///app/src/delivery/supervisor.ts")).toBe("file:///app/src/delivery/worker.ts");
  expect(workerEntry("file:///$bunfs/root/fanout")).toBe("file:///$bunfs/root/delivery/worker.ts");
});
