/**
 * GET /events and the sweep with a clock the test moves: the 24-hour cut-off of usage events, which the
 * end-to-end tests cannot reach with the real clock.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { buildHandler } from "../../http/app.ts";
import { loadConfig } from "../../config.ts";
import { manualClock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/log.ts";
import { openSqliteStore, type SqliteStore } from "../../store/sqlite/index.ts";
import { createOrganization } from "../organizations/onboarding.ts";
import { startEventSweep } from "./sweep.ts";
import { EVENT_RETENTION_MS } from "./service.ts";
import { tempFolder } from "../../../test/support/temp.ts";

const KEY = "events-test-key";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

let store: SqliteStore;
let clock: ReturnType<typeof manualClock>;
let app: ReturnType<typeof buildHandler>;

beforeEach(async () => {
  store = openSqliteStore(join(tempFolder("fanout-events-"), "events.db"), { durability: "normal" });
  clock = manualClock();
  await createOrganization(store, "com.example.events", KEY, clock.now());
  const { config } = loadConfig({}, []);
  app = buildHandler({ store, config, clock, log: quiet, version: "test", nudge: () => {} });
});
afterEach(async () => store.close());

const call = async (method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { "x-api-key": KEY, accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await app(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
  return { status: response.status, body: await response.json() };
};
const types = async () => ((await call("GET", "/v1/events")).body as { events: { type: string }[] }).events.map((e) => e.type);

describe("events and the clock", () => {
  test("are listed for exactly 24 hours after they were stored", async () => {
    clock.advance(1_000);
    expect((await call("POST", "/v1/queues", { name: "q" })).status).toBe(200);
    const stored = clock.now();
    clock.set(stored - 1_000 + EVENT_RETENTION_MS);
    expect(await types()).toEqual(["api_key_added", "queue_added"]);
    clock.advance(1);
    expect(await types()).toEqual(["queue_added"]);
    clock.set(stored + EVENT_RETENTION_MS);
    expect(await types()).toEqual(["queue_added"]);
    clock.advance(1);
    expect(await types()).toEqual([]);
  });

  test("the sweep deletes what is older than 24 hours and keeps the rest", async () => {
    clock.advance(EVENT_RETENTION_MS);
    await call("POST", "/v1/queues", { name: "recent" });
    clock.advance(1);
    const stop = startEventSweep(store, clock, quiet, 60_000);
    await stop();
    const [org] = await store.orgs.list();
    const kept = await store.events.list(org!.id, { prefix: null, after: null, limit: 10, since: 0 });
    expect(kept.map((e) => e.type)).toEqual(["queue_added"]);
  });

  test("a failing sweep is logged and does not throw", async () => {
    const errors: string[] = [];
    const log: Logger = { ...quiet, error: (m) => void errors.push(m) };
    const broken = { ...store, events: { ...store.events, sweep: async () => Promise.reject(new Error("disk gone")) } };
    await startEventSweep(broken, clock, log, 60_000)();
    expect(errors).toEqual(["sweeping usage events failed"]);
  });
});
