/**
 * The hot publish route answers exactly as the app's own route: the same requests go to a handler with the hot
 * routes (buildHandler) and to the app alone (buildApp), each over its own store, and status, body and headers
 * must match, ids aside. The end-to-end suite covers the hot route over HTTPS.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { buildApp, buildHandler, sharedOf, type Deps } from "./app.ts";
import { hotRoutes } from "./hot.ts";
import { hotPublishRoute } from "../modules/messages/routes.ts";
import { loadConfig } from "../config.ts";
import { manualClock } from "../lib/clock.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { createOrganization } from "../modules/organizations/onboarding.ts";
import { tempFolder } from "../../test/support/temp.ts";

const KEY = "hot-test-key";
const BASE = "https://fanout.test";
type Side = { store: SqliteStore; deps: Deps; fetch: (r: Request) => Response | Promise<Response>; queues: Record<string, string>; log: string[] };
let sides: Side[];

async function side(hot: boolean, env: Record<string, string>): Promise<Side> {
  const store = openSqliteStore(join(tempFolder("fanout-hot-"), "hot.db"), { durability: "normal" });
  await createOrganization(store, "com.example.hot", KEY, 0);
  const log: string[] = [];
  const { config } = loadConfig({ FANOUT_LOCKOUT: "2/1m:10s", FANOUT_MAX_MESSAGE_BYTES: "2048", ...env }, []);
  const deps: Deps = {
    store, config, clock: manualClock(), version: "test", nudge() {}, peerAddress: () => "10.0.0.1",
    log: { info() {}, warn: (m) => log.push(m), error: (m) => log.push(m) },
  };
  const fetch = hot ? buildHandler(deps) : buildApp(deps).handle;
  return { store, deps, fetch, queues: {}, log };
}

async function both(env: Record<string, string> = {}) {
  sides = [await side(true, env), await side(false, env)];
  // The same queues on both sides, under the same names; their ids differ and are masked when compared.
  for (const s of sides) {
    for (const body of [{ name: "plain" }, { name: "typed", schema: { n: { type: "number", min: 1 } } }]) {
      const res = await s.fetch(new Request(`${BASE}/v1/queues`, { method: "POST", headers: { "x-api-key": KEY, "content-type": "application/json" }, body: JSON.stringify(body) }));
      if (res.status !== 200) throw new Error(await res.text());
      s.queues[body.name] = ((await res.json()) as { queue: { id: string } }).queue.id;
    }
  }
}
afterEach(async () => {
  for (const s of sides ?? []) await s.store.close();
});

type Call = { queue?: string; path?: (queueId: string) => string; method?: string; body?: string; headers?: Record<string, string>; key?: string | null };

/** One answer, with the side's ids replaced by placeholders, so both sides' answers can be compared. */
async function answer(s: Side, c: Call) {
  const q = s.queues[c.queue ?? "plain"]!;
  const headers: Record<string, string> = { "content-type": "application/json", ...c.headers };
  if (c.key !== null) headers["x-api-key"] = c.key ?? KEY;
  const path = c.path ? c.path(q) : `/v1/queues/${q}/messages`;
  const res = await s.fetch(new Request(`${BASE}${path}`, { method: c.method ?? "POST", headers, body: c.body }));
  const mask = (text: string) => text.replaceAll(q, "<queue>").replace(/msg_[A-Za-z0-9]+/g, "<message>").replace(/request id [0-9a-f-]+/, "request id <id>");
  const text = mask(await res.text());
  const kept = [...res.headers.entries()].filter(([name]) => name !== "date").map(([name, value]) => [name, mask(value)]).sort();
  return { status: res.status, text, headers: kept };
}

async function expectSame(c: Call, status: number) {
  const [hot, app] = await Promise.all(sides.map((s) => answer(s, c)));
  expect(app!.status).toBe(status);
  expect(hot).toEqual(app!);
}

const data = (d: unknown, extra: object = {}) => JSON.stringify({ data: d, ...extra });

describe("hot publish route", () => {
  test("answers every publish outcome as the app does", async () => {
    await both();
    await expectSame({ body: data({ a: 1 }, { name: "first" }) }, 200);
    await expectSame({ body: "" }, 200); // no body: null data
    await expectSame({ body: "{not json" }, 400);
    await expectSame({ body: JSON.stringify({ name: "x" }) }, 400); // data missing
    await expectSame({ body: data(1, { colour: "red" }) }, 400); // unknown field
    await expectSame({ body: data(1, { name: "" }) }, 400);
    await expectSame({ body: data("x".repeat(3000)) }, 413); // over the message limit, under the body limit
    await expectSame({ queue: "typed", body: data({ n: 1 }) }, 200);
    await expectSame({ queue: "typed", body: data({ n: 0 }) }, 422);
    await expectSame({ path: () => "/v1/queues/q_nowhere/messages", body: data(1) }, 404);
    await expectSame({ body: data(1), headers: { "content-type": "text/plain" } }, 415);
    await expectSame({ body: data(1), headers: { accept: "text/html" } }, 406);
    await expectSame({ body: data(1), key: "wrong-key" }, 401);
    await expectSame({ body: data(1), key: null }, 401);
    await expectSame({ body: data(1) }, 403); // locked after two failures
  });

  test("names each refused body field by its JSON Pointer with what it must be, as the app does", async () => {
    await both();
    const body = JSON.stringify({ dat: 1, name: "" });
    await expectSame({ body }, 400);
    expect(JSON.parse((await answer(sides[0]!, { body })).text).errors).toEqual([
      { path: "/data", message: "is required" },
      { path: "/dat", message: "is not a known field" },
      { path: "/name", message: "must be a string of 1 to 128 characters" },
    ]);
  });

  test("carries the rate-limit headers on every answer, and refuses past the limit alike", async () => {
    await both({ FANOUT_RATE_LIMIT: "6" }); // two of the six went to creating the queues
    await expectSame({ body: data(1) }, 200);
    await expectSame({ body: "{" }, 400);
    await expectSame({ body: data(1, { extra: true }) }, 400);
    await expectSame({ body: data(2) }, 200);
    await expectSame({ body: data(1) }, 429);
    await expectSame({ body: "{" }, 429);
  });

  test("serves only what it matches exactly; the app serves the rest", async () => {
    await both();
    const hot = sides[0]!;
    // Each of these is answered by the app: a query string, another method, a trailing slash.
    await expectSame({ path: (q) => `/v1/queues/${q}/messages?pretty=true`, body: data(1) }, 200);
    await expectSame({ path: (q) => `/v1/queues/${q}/messages`, method: "PUT", body: data(1) }, 405);
    await expectSame({ path: (q) => `/v1/queues/${q}/messages/`, body: data(1) }, 200);
    // What was published through either route is listed the same, with the hot route's messages counted.
    await expectSame({ path: (q) => `/v1/queues/${q}/messages`, method: "GET" }, 200);
    const list = await answer(hot, { path: (q) => `/v1/queues/${q}/messages`, method: "GET" });
    expect(JSON.parse(list.text).messages).toHaveLength(2);
    expect(hot.log).toEqual([]);
    // Which of them the hot route takes at all.
    const shared = sharedOf(hot.deps);
    const takes = (path: string, method = "POST") =>
      hotRoutes(hot.deps, shared.gate, [hotPublishRoute(hot.deps, shared.queues)])(new Request(`${BASE}${path}`, { method, headers: { "x-api-key": KEY } }));
    const q = hot.queues.plain!;
    expect(await takes(`/v1/queues/${q}/messages`)).toBeInstanceOf(Response);
    for (const path of [`/v1/queues/${q}/messages?pretty=true`, `/v1/queues/${q}/messages/`, `/queues/${q}/messages`, `/v1/queues/q%20x/messages`]) {
      expect(takes(path)).toBeUndefined();
    }
    expect(takes(`/v1/queues/${q}/messages`, "GET")).toBeUndefined();
  });
});
