/**
 * The hot publish route answers exactly as the app's own route, through the handler the server serves
 * (buildHandler): the same requests go to the hot route (the exact path), to the app (the same path with a query
 * string, which the hot route leaves to the app), and to each of them through the Idempotency-Key step, each over
 * its own store, and status, body and headers must match, ids aside. The end-to-end suite covers the hot route
 * over HTTPS.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { buildHandler, sharedOf, type Deps } from "./app.ts";
import { hotRoutes } from "./hot.ts";
import { MAX_BODY_BYTES } from "./negotiation.ts";
import { hotPublishRoute } from "../modules/messages/routes.ts";
import { loadConfig } from "../config.ts";
import { manualClock } from "../lib/clock.ts";
import { MAX_JSON_DEPTH } from "../lib/json-depth.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { createOrganization } from "../modules/organizations/onboarding.ts";
import { tempFolder } from "../../test/support/temp.ts";

const KEY = "hot-test-key";
const BASE = "https://fanout.test";

/** The ways into the publish route: the hot route or the app, each with or without an Idempotency-Key. */
type Way = { name: string; app: boolean; keyed: boolean };
const WAYS: Way[] = [
  { name: "app", app: true, keyed: false },
  { name: "hot", app: false, keyed: false },
  { name: "app with an Idempotency-Key", app: true, keyed: true },
  { name: "hot with an Idempotency-Key", app: false, keyed: true },
];

type Side = { way: Way; store: SqliteStore; deps: Deps & { clock: ReturnType<typeof manualClock> }; fetch: (r: Request) => Response | Promise<Response>; queues: Record<string, string>; log: string[] };
let sides: Side[] = [];

async function side(way: Way, env: Record<string, string>): Promise<Side> {
  const store = openSqliteStore(join(tempFolder("fanout-hot-"), "hot.db"), { durability: "normal" });
  await createOrganization(store, "com.example.hot", KEY, 0);
  const log: string[] = [];
  const { config } = loadConfig({ FANOUT_LOCKOUT: "2/1m:10s", FANOUT_MAX_MESSAGE_BYTES: "2048", ...env }, []);
  const deps = {
    store, config, clock: manualClock(), version: "test", nudge() {}, peerAddress: () => "10.0.0.1",
    log: { info() {}, warn: (m: string) => log.push(m), error: (m: string) => log.push(m) },
  };
  return { way, store, deps, fetch: buildHandler(deps), queues: {}, log };
}

async function all(env: Record<string, string> = {}) {
  sides = await Promise.all(WAYS.map((way) => side(way, env)));
  // The same queues on every side, under the same names; their ids differ and are masked when compared.
  for (const s of sides) {
    for (const body of [{ name: "plain" }, { name: "typed", schema: { n: { type: "number", min: 1 } } }]) {
      const res = await s.fetch(new Request(`${BASE}/v1/queues`, { method: "POST", headers: { "x-api-key": KEY, "content-type": "application/json" }, body: JSON.stringify(body) }));
      if (res.status !== 200) throw new Error(await res.text());
      s.queues[body.name] = ((await res.json()) as { queue: { id: string } }).queue.id;
    }
  }
}
afterEach(async () => {
  for (const s of sides) await s.store.close();
  sides = [];
});

type Call = {
  queue?: string; path?: (queueId: string) => string; method?: string; body?: string | (() => ReadableStream<Uint8Array>);
  headers?: Record<string, string>; key?: string | null;
};
let sent = 0;

/** The request of `c` as `way` sends it: the app's way adds a query string the route ignores. */
function requestOf(s: Side, c: Call, n: number): Request {
  const q = s.queues[c.queue ?? "plain"]!;
  const headers: Record<string, string> = { "content-type": "application/json", ...c.headers };
  if (c.key !== null) headers["x-api-key"] = c.key ?? KEY;
  if (s.way.keyed) headers["idempotency-key"] = `key-${n}`;
  const path = c.path ? c.path(q) : `/v1/queues/${q}/messages`;
  const routed = s.way.app ? `${path}${path.includes("?") ? "&" : "?"}via=app` : path;
  const body = typeof c.body === "function" ? c.body() : c.body;
  return new Request(`${BASE}${routed}`, { method: c.method ?? "POST", headers, body, duplex: "half" } as RequestInit);
}

/** One answer, with the side's ids replaced by placeholders, so every side's answers can be compared. */
async function answer(s: Side, c: Call, n = ++sent) {
  const res = await s.fetch(requestOf(s, c, n));
  const q = s.queues[c.queue ?? "plain"]!;
  const mask = (text: string) => text.replaceAll(q, "<queue>").replace(/msg_[A-Za-z0-9]+/g, "<message>").replace(/request id [0-9a-f-]+/, "request id <id>");
  const text = mask(await res.text());
  const headers = [...res.headers.entries()].filter(([name]) => name !== "date").map(([name, value]) => [name, mask(value)]).sort();
  return { status: res.status, text, headers };
}

/** Every way answers `c` as the app does, with `status`. */
async function expectSame(c: Call, status: number) {
  const n = ++sent;
  const [app, ...others] = await Promise.all(sides.map((s) => answer(s, c, n)));
  expect(app!.status).toBe(status);
  for (const [i, other] of others.entries()) expect({ way: sides[i + 1]!.way.name, ...other }).toEqual({ way: sides[i + 1]!.way.name, ...app! });
}

const data = (d: unknown, extra: object = {}) => JSON.stringify({ data: d, ...extra });
const deep = (levels: number) => `{"data":${"[".repeat(levels)}${"]".repeat(levels)}}`;
const oversized = () => data("x".repeat(MAX_BODY_BYTES));

/** A body of `bytes` without a declared length (a chunked HTTP/1.1 body, or HTTP/2 without content-length). */
const chunked = (bytes: number) => () => {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let left = bytes;
  return new ReadableStream<Uint8Array>({
    pull(out) {
      if (left <= 0) return out.close();
      out.enqueue(chunk.subarray(0, Math.min(left, chunk.length)));
      left -= chunk.length;
    },
  });
};

describe("hot publish route", () => {
  test("answers every publish outcome as the app does, with and without an Idempotency-Key", async () => {
    await all();
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
  });

  test("bounds the body before the gate: over-deep and oversized bodies are refused alike, key or none", async () => {
    await all();
    for (const key of [undefined, null, "wrong-key"]) {
      await expectSame({ key, body: deep(MAX_JSON_DEPTH + 1) }, 400);
      await expectSame({ key, body: oversized(), headers: { "content-length": String(Buffer.byteLength(oversized())) } }, 413);
      await expectSame({ key, body: data(1), headers: { "content-length": String(9 * MAX_BODY_BYTES) } }, 413); // declared only; closes
      await expectSame({ key, body: chunked(MAX_BODY_BYTES + 1) }, 413);
      await expectSame({ key, body: chunked(9 * MAX_BODY_BYTES) }, 413); // past what is drained: closes
    }
    await expectSame({ body: deep(MAX_JSON_DEPTH - 1) }, 200);
    // None of the keyless refusals above counted toward the lockout: the body was refused before the gate.
    await expectSame({ body: data(1) }, 200);
  });

  test("refuses unauthenticated and locked-out requests alike; a locked address still gets its body refusals first", async () => {
    await all();
    await expectSame({ body: data(1), key: "wrong-key" }, 401);
    await expectSame({ body: data(1), key: null }, 401);
    await expectSame({ body: data(1) }, 403); // locked after two failures
    await expectSame({ body: "{not json" }, 403);
    await expectSame({ body: deep(MAX_JSON_DEPTH + 1) }, 400);
    await expectSame({ body: chunked(MAX_BODY_BYTES + 1) }, 413);
    for (const s of sides) s.deps.clock.advance(10_000);
    await expectSame({ body: data(1) }, 200);
  });

  test("names each refused body field by its JSON Pointer with what it must be, as the app does", async () => {
    await all();
    const body = JSON.stringify({ dat: 1, name: "" });
    await expectSame({ body }, 400);
    expect(JSON.parse((await answer(sides[1]!, { body })).text).errors).toEqual([
      { path: "/data", message: "is required" },
      { path: "/dat", message: "is not a known field" },
      { path: "/name", message: "must be a string of 1 to 128 characters" },
    ]);
  });

  test("carries the rate-limit headers on every answer, and refuses past the limit alike", async () => {
    await all({ FANOUT_RATE_LIMIT: "7" }); // two of the seven went to creating the queues
    await expectSame({ body: data(1) }, 200);
    await expectSame({ body: "{" }, 400);
    await expectSame({ body: data(1, { extra: true }) }, 400);
    await expectSame({ path: () => "/v1/queues/q_nowhere/messages", body: data(1) }, 404);
    await expectSame({ body: data(2) }, 200);
    await expectSame({ body: data(1) }, 429);
    await expectSame({ body: "{" }, 429);
    await expectSame({ path: () => "/v1/queues/q_nowhere/messages", body: data(1) }, 429);
    await expectSame({ body: deep(MAX_JSON_DEPTH + 1) }, 400); // the body is bounded first, without the headers
    expect((await answer(sides[1]!, { body: data(1) })).headers.map(([name]) => name)).toContain("x-ratelimit-remaining");
  });

  test("serves only what it matches exactly; the app serves the rest", async () => {
    await all();
    const hot = sides[1];
    // Each of these is answered by the app: a query string, another method, a trailing slash.
    await expectSame({ path: (q) => `/v1/queues/${q}/messages?pretty=true`, body: data(1) }, 200);
    await expectSame({ path: (q) => `/v1/queues/${q}/messages`, method: "PUT", body: data(1) }, 405);
    await expectSame({ path: (q) => `/v1/queues/${q}/messages/`, body: data(1) }, 200);
    // What was published through each way is listed.
    for (const s of sides) {
      const listed = await answer(s, { path: (q) => `/v1/queues/${q}/messages`, method: "GET", body: undefined });
      expect([s.way.name, JSON.parse(listed.text).messages.length]).toEqual([s.way.name, 2]);
    }
    for (const s of sides) expect([s.way.name, s.log]).toEqual([s.way.name, []]);
    // Which requests the hot route takes at all: the comparisons above went both ways only if it takes the
    // exact path and leaves the app's (a query string) to the app.
    const takes = (path: string, method = "POST") => {
      const { pathname, search } = new URL(`${BASE}${path}`);
      return hotRoutes(hot!.deps, [hotPublishRoute(hot!.deps, sharedOf(hot!.deps).queues)])(new Request(`${BASE}${path}`, { method }), pathname, search);
    };
    const q = hot!.queues.plain!;
    expect(takes(`/v1/queues/${q}/messages`)).toBeFunction();
    for (const path of [`/v1/queues/${q}/messages?via=app`, `/v1/queues/${q}/messages?pretty=true`, `/v1/queues/${q}/messages/`, `/queues/${q}/messages`, `/v1/queues/q%20x/messages`]) {
      expect(takes(path)).toBeUndefined();
    }
    expect(takes(`/v1/queues/${q}/messages`, "GET")).toBeUndefined();
  });
});
