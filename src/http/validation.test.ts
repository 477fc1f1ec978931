/**
 * Validation errors name what was wrong in one style: a JSON Pointer into the body, or the query parameter's
 * name, with a message that says what the value must be. The app is served in process over a real store; the
 * hot publish route renders the same (hot.test.ts compares the two).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { buildHandler, type Deps } from "./app.ts";
import { loadConfig } from "../config.ts";
import { manualClock } from "../lib/clock.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { createOrganization } from "../modules/organizations/onboarding.ts";
import { tempFolder } from "../../test/support/temp.ts";

const KEY = "validation-test-key";
let store: SqliteStore;
let app: ReturnType<typeof buildHandler>;
let queue: string;

async function errorsOf(method: string, path: string, body?: string) {
  const headers: Record<string, string> = { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) };
  const res = await app(new Request(`https://fanout.test${path}`, { method, headers, body }));
  expect(res.status).toBe(400);
  return ((await res.json()) as { errors?: unknown }).errors;
}

beforeAll(async () => {
  store = openSqliteStore(join(tempFolder("fanout-validation-"), "v.db"), { durability: "normal" });
  await createOrganization(store, "com.example.validation", KEY, 0);
  const deps: Deps = { store, config: loadConfig({}, []).config, clock: manualClock(), version: "test", nudge() {}, log: { info() {}, warn() {}, error() {} } };
  app = buildHandler(deps);
  const res = await app(new Request("https://fanout.test/v1/queues", { method: "POST", headers: { "x-api-key": KEY } }));
  queue = ((await res.json()) as { queue: { id: string } }).queue.id;
});
afterAll(async () => void (await store.close()));

test("a query parameter is named, out of range or not a number alike", async () => {
  const perPage = [{ path: "per_page", message: "must be an integer from 1 to 100" }];
  expect(await errorsOf("GET", "/v1/queues?per_page=0")).toEqual(perPage);
  expect(await errorsOf("GET", "/v1/queues?per_page=101")).toEqual(perPage);
  expect(await errorsOf("GET", "/v1/queues?per_page=abc")).toEqual(perPage);
  expect(await errorsOf("GET", "/v1/queues?per_page=2.5")).toEqual(perPage);
  expect(await errorsOf("GET", "/v1/queues?page=abc")).toEqual([{ path: "page", message: expect.stringMatching(/^must be an integer from 1 to \d+$/) }]);
  expect(await errorsOf("GET", "/v1/events?limit=0")).toEqual([{ path: "limit", message: "must be an integer from 1 to 1000" }]);
  expect(await errorsOf("GET", "/v1/events?startAfter=-1")).toEqual([{ path: "startAfter", message: "must be an integer of at least 0" }]);
  expect(await errorsOf("GET", "/v1/events?events=everything")).toEqual([
    { path: "events", message: "must be one of: all, api_keys, listeners, messages, queues" },
  ]);
});

test("a body field is a JSON Pointer, once per field, with what it must be", async () => {
  expect(await errorsOf("POST", "/v1/queues", JSON.stringify({ nmae: "x" }))).toEqual([{ path: "/nmae", message: "is not a known field" }]);
  expect(await errorsOf("POST", "/v1/queues", JSON.stringify({ name: 5 }))).toEqual([{ path: "/name", message: "must be a string of 1 to 128 characters" }]);
  expect(await errorsOf("POST", "/v1/queues", JSON.stringify({ name: "a\u0001" }))).toEqual([
    { path: "/name", message: "must be 1 to 128 characters, no control characters" },
  ]);
  expect(await errorsOf("POST", "/v1/queues", "[]")).toEqual([{ path: "", message: "must be an object" }]);
  expect(await errorsOf("PUT", `/v1/queues/${queue}`)).toEqual([{ path: "", message: "is required" }]);
  expect(await errorsOf("POST", `/v1/queues/${queue}/messages`, JSON.stringify({ dat: 1 }))).toEqual([
    { path: "/data", message: "is required" },
    { path: "/dat", message: "is not a known field" },
  ]);
  const scopes = [{ resource: "everything", access: "read", targets: [] }];
  expect(await errorsOf("POST", "/v1/api_keys", JSON.stringify({ scopes }))).toEqual([
    { path: "/scopes/0/resource", message: expect.stringMatching(/^must be one of: api_clients, api_keys, events, /) },
    { path: "/scopes/0/targets", message: 'must be an array of 1 to 100 items or "*"' },
  ]);
});
