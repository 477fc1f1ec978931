/**
 * Idempotency keys with a clock the test moves: a key is replayed for exactly 24 hours after it was recorded, and
 * the sweep then deletes its record. The end-to-end suite (test/e2e/idempotency.test.ts) covers the rest over HTTPS.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { join } from "node:path";
import { buildHandler } from "./app.ts";
import { IDEMPOTENCY_WINDOW_MS } from "./idempotency.ts";
import { loadConfig } from "../config.ts";
import { manualClock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { createOrganization } from "../modules/organizations/onboarding.ts";
import { startEventSweep } from "../modules/events/sweep.ts";
import { tempFolder } from "../../test/support/temp.ts";

const KEY = "idempotency-test-key";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

let store: SqliteStore;
let clock: ReturnType<typeof manualClock>;
let handle: ReturnType<typeof buildHandler>;
let queue: string;

const post = async (path: string, body: unknown, idempotencyKey?: string) => {
  const headers: Record<string, string> = { "x-api-key": KEY, "content-type": "application/json" };
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  const response = await handle(new Request(`https://fanout.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }));
  return { status: response.status, replayed: response.headers.get("idempotent-replayed"), text: await response.text() };
};
const publish = (idempotencyKey: string) => post(`/v1/queues/${queue}/messages`, { data: 1 }, idempotencyKey);
const stored = async () => (await store.messages.list((await store.orgs.list())[0]!.id, { visible: "all" }, { offset: 0, limit: 100 })).total;

beforeEach(async () => {
  store = openSqliteStore(join(tempFolder("fanout-idempotency-"), "idempotency.db"), { durability: "normal" });
  clock = manualClock();
  await createOrganization(store, "com.example.idempotency", KEY, clock.now());
  handle = buildHandler({ store, config: loadConfig({}, []).config, clock, log: quiet, version: "test", nudge: () => {} });
  queue = JSON.parse((await post("/v1/queues", { name: "q" })).text).queue.id;
});
afterEach(async () => store.close());

test("a key is replayed for 24 hours after it was recorded, then the request runs anew", async () => {
  const first = await publish("k");
  expect(first).toMatchObject({ status: 200, replayed: null });
  clock.advance(IDEMPOTENCY_WINDOW_MS);
  expect(await publish("k")).toEqual({ ...first, replayed: "true" });
  clock.advance(1);
  const anew = await publish("k");
  expect(anew).toMatchObject({ status: 200, replayed: null });
  expect(anew.text).not.toBe(first.text);
  expect(await stored()).toBe(2);
});

test("the sweep deletes records older than 24 hours and keeps the rest", async () => {
  await publish("old");
  clock.advance(IDEMPOTENCY_WINDOW_MS);
  await publish("recent");
  clock.advance(1);
  await startEventSweep(store, clock, quiet, 60_000)();
  // One record is left, "recent": a sweep of everything up to now deletes it alone.
  expect(await store.idempotency.sweep(clock.now() + 1)).toBe(1);
});
