/**
 * What a portal token reaches (docs/portal.md), over HTTPS: its session's listeners of its queue, their deliveries
 * and attempts, redelivery to them; and nothing else. Every route of the app (its own route list, as the fuzz test
 * reads it) by its method, aimed at another queue, at a listener of its queue outside the session, at a message
 * that went to no listener of the session, at the organization's keys, events and sessions, and at another
 * organization's ids, answers 403 or 404, and the organization reads the same afterwards. A view-only token
 * cannot write at all, not even its own listeners.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cli, startFanout, waitFor, type Fanout } from "./harness.ts";
import { appRoutes, template } from "./fuzz-cases.ts";

let fanout: Fanout;
let otherKey: string;
const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
const hook = `http://127.0.0.1:${receiver.port}/hook`;
const w: Record<string, string> = {};

const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call("h1", method, path, opts);
async function ok(method: string, path: string, body?: unknown, key?: string, expected = 200) {
  const r = await call(method, path, { body, key });
  if (r.status !== expected) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
}
const listener = async (q: string, name: string, key?: string) =>
  (await ok("POST", `/v1/queues/${q}/listeners`, { name, notify_url: hook, liveness_url: hook }, key)).listener.id as string;
const publish = async (q: string, key?: string) => (await ok("POST", `/v1/queues/${q}/messages`, { name: "m", data: { n: 1 } }, key)).message.id as string;
const session = async (body: object, key?: string) => (await ok("POST", "/v1/portal_sessions", body, key, 201)).portal_session as { id: string; url: string };
const tokenOf = (s: { url: string }) => s.url.split("#")[1]!;

/** Until every delivery of these messages is acknowledged, so nothing changes under the comparison but what the test does. */
async function settled(queue: string, messages: string[], key?: string) {
  await waitFor(async () => {
    for (const m of messages) {
      const ds = (await ok("GET", `/v1/queues/${queue}/messages/${m}`, undefined, key)).message.deliveries;
      if (ds.length === 0 || ds.some((d: { state: string }) => d.state !== "acknowledged")) return false;
    }
    return true;
  }, 20_000, () => "deliveries did not settle");
}

beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000000/1m:1s" } });
  const made = await cli(["orgs", "create", "com.example.portal-other"], { FANOUT_DB: fanout.dbPath });
  otherKey = made.stdout.match(/owner key:\s+(\S+)/)![1]!;
  w.queue = (await ok("POST", "/v1/queues", { name: "shipments" })).queue.id;
  w.mine = await listener(w.queue, "mine");
  w.theirs = await listener(w.queue, "theirs");
  w.message = await publish(w.queue);
  w.theirsOnly = (await ok("POST", `/v1/queues/${w.queue}/listeners/${w.theirs}/test`, undefined, undefined, 202)).message.id;
  const other = (await ok("POST", "/v1/queues", { name: "invoices", schema: { n: { type: "number" } } })).queue;
  [w.otherQueue, w.schemaId] = [other.id, other.schema_id];
  w.otherListener = await listener(w.otherQueue, "elsewhere");
  w.otherMessage = await publish(w.otherQueue);
  w.apiKey = (await ok("POST", "/v1/api_keys", { name: "ci" })).id;
  w.org = (await ok("GET", "/v1/events?limit=1")).events[0].client.id;
  w.foreignQueue = (await ok("POST", "/v1/queues", { name: "foreign" }, otherKey)).queue.id;
  w.foreignListener = await listener(w.foreignQueue, "foreign", otherKey);
  w.foreignMessage = await publish(w.foreignQueue, otherKey);
  w.foreignOrg = (await ok("GET", "/v1/events?limit=1", undefined, otherKey)).events[0].client.id;
  w.foreignSession = (await session({ queue_id: w.foreignQueue }, otherKey)).id;
  w.otherSession = (await session({ queue_id: w.otherQueue })).id;
  const portal = await session({ queue_id: w.queue, listener_ids: [w.mine] });
  [w.session, w.token] = [portal.id, tokenOf(portal)];
  const viewOnly = await session({ queue_id: w.queue, can_manage: false });
  [w.viewSession, w.viewToken] = [viewOnly.id, tokenOf(viewOnly)];
  await settled(w.queue, [w.message, w.theirsOnly]);
  await settled(w.otherQueue, [w.otherMessage]);
  await settled(w.foreignQueue, [w.foreignMessage], otherKey);
}, 60_000);
afterAll(async () => {
  await fanout.stop();
  receiver.stop(true);
});

describe("what a portal token may do", () => {
  const as = (method: string, path: string, body?: unknown) => call(method, path, { key: w.token, body });

  test("its listeners only: lists, reads, and no listener outside the session", async () => {
    const ids = (r: { body: { listeners: { id: string }[] } }) => r.body.listeners.map((l) => l.id);
    expect(ids(await as("GET", `/v1/queues/${w.queue}/listeners`))).toEqual([w.mine]);
    expect(ids(await as("GET", "/v1/listeners"))).toEqual([w.mine]);
    expect((await as("GET", `/v1/queues/${w.queue}/listeners/${w.mine}`)).status).toBe(200);
    expect((await as("GET", `/v1/queues/${w.queue}/listeners/${w.theirs}`)).status).toBe(403);
  });

  test("a message shows only its deliveries and attempts to the session's listeners; one that went to none is unknown", async () => {
    const got = (await as("GET", `/v1/queues/${w.queue}/messages/${w.message}`)).body.message;
    expect(got.deliveries.map((d: { listener: { id: string } }) => d.listener.id)).toEqual([w.mine]);
    const attempts = (await as("GET", `/v1/queues/${w.queue}/messages/${w.message}/attempts`)).body.attempts;
    expect(attempts.length).toBeGreaterThan(0);
    expect(new Set(attempts.map((a: { listener: { id: string } }) => a.listener.id))).toEqual(new Set([w.mine]));
    expect((await as("GET", `/v1/queues/${w.queue}/messages/${w.theirsOnly}`)).status).toBe(404);
    expect((await as("GET", `/v1/queues/${w.queue}/messages/${w.theirsOnly}/attempts`)).status).toBe(404);
    const deliveries = (await as("GET", `/v1/queues/${w.queue}/listeners/${w.mine}/deliveries`)).body.deliveries;
    expect(deliveries.map((d: { message: { id: string } }) => d.message.id)).toEqual([w.message]);
    // A filter is tried on what its listeners received only: the queue's other messages are not its to count.
    const filter = { names: ["m", "fanout.test"] };
    expect((await as("POST", `/v1/queues/${w.queue}/filter_test`, { filter })).body).toEqual({ matched: 1, of: 1 });
    expect(await ok("POST", `/v1/queues/${w.queue}/filter_test`, { filter })).toEqual({ matched: 2, of: 2 });
  });

  test("redelivers to its listeners only", async () => {
    const path = `/v1/queues/${w.queue}/messages/${w.message}/redeliver`;
    expect((await as("POST", path, { listeners: [w.theirs] })).status).toBe(403);
    expect((await as("POST", path, { listeners: [w.mine, w.theirs] })).status).toBe(403);
    expect((await as("POST", path, {})).body.redelivered).toBe(1);
    expect((await as("POST", `/v1/queues/${w.queue}/messages/${w.theirsOnly}/redeliver`, {})).status).toBe(404);
    await settled(w.queue, [w.message]);
    const cycles = (await ok("GET", `/v1/queues/${w.queue}/messages/${w.message}`)).message.deliveries.map((d: { listener: { id: string }; cycle: number }) => [d.listener.id, d.cycle]);
    expect(cycles).toEqual([[w.mine, 2], [w.theirs, 1]]);
  });

  test("manages its listeners: settings, secret, test; its writes name the session, not a key", async () => {
    const base = `/v1/queues/${w.queue}/listeners/${w.mine}`;
    expect((await as("PUT", base, { rate_limit: 10 })).status).toBe(200);
    expect((await as("GET", `${base}/secret`)).status).toBe(200);
    expect((await as("POST", `${base}/test`)).status).toBe(202);
    expect((await as("POST", `/v1/queues/${w.queue}/listeners/${w.theirs}/test`)).status).toBe(403);
    expect((await as("POST", `/v1/queues/${w.queue}/filter_test`, { filter: { names: ["m"] }, message: { name: "m", data: {} } })).body).toEqual({ matches: true });
    const events = (await ok("GET", "/v1/events?events=listeners&limit=1000")).events;
    expect(events.filter((e: { type: string }) => e.type === "listener_updated").at(-1)).toMatchObject({ api_key: null, portal_session: { id: w.session }, listener: { id: w.mine } });
  });
});

/** The organization as its owner reads it, without what changes by itself (probes, deliveries in flight). */
async function snapshot() {
  const get = async (path: string, key?: string) => (await ok("GET", path, undefined, key));
  const listenerView = (l: Record<string, unknown>) => ({ ...l, liveness: undefined, messages: undefined });
  const events = (e: { type: string }[]) => e.filter((x) => x.type !== "listener_state_changed");
  const secrets = [];
  for (const [q, l, key] of [[w.queue, w.mine], [w.queue, w.theirs], [w.otherQueue, w.otherListener], [w.foreignQueue, w.foreignListener, otherKey]]) {
    secrets.push(await get(`/v1/queues/${q}/listeners/${l}/secret`, key));
  }
  return {
    queues: await get("/v1/queues?per_page=100"),
    listeners: (await get("/v1/listeners?per_page=100")).listeners.map(listenerView),
    foreignListeners: (await get("/v1/listeners?per_page=100", otherKey)).listeners.map(listenerView),
    messages: await get("/v1/messages?per_page=100"),
    foreignMessages: await get("/v1/messages?per_page=100", otherKey),
    deliveries: (await get(`/v1/queues/${w.queue}/messages/${w.message}`)).message.deliveries.map((d: { cycle: number }) => d.cycle),
    keys: await get("/v1/api_keys?per_page=100"),
    sessions: await get("/v1/portal_sessions?per_page=100"),
    foreignSessions: await get("/v1/portal_sessions?per_page=100", otherKey),
    org: await get(`/v1/api_clients/${w.org}`),
    events: events((await get("/v1/events?limit=1000")).events),
    foreignEvents: events((await get("/v1/events?limit=1000", otherKey)).events),
    secrets,
  };
}

/** Ids aimed at what the token must not reach; each route is tried with each set its path can hold. */
const TARGETS = (): Record<string, string>[] => [
  { queue_id: w.otherQueue, listener_id: w.otherListener, message_id: w.otherMessage, schema_id: w.schemaId },
  { queue_id: w.queue, listener_id: w.theirs, message_id: w.theirsOnly, schema_id: w.schemaId },
  { queue_id: w.queue, listener_id: w.otherListener, message_id: w.otherMessage, schema_id: "none" },
  { queue_id: w.otherQueue, listener_id: w.mine, message_id: w.message, schema_id: w.schemaId },
  { queue_id: w.foreignQueue, listener_id: w.foreignListener, message_id: w.foreignMessage, schema_id: "none" },
  { api_key_id: w.apiKey, api_client_id: w.org, portal_session_id: w.otherSession },
  { api_client_id: w.foreignOrg, portal_session_id: w.foreignSession },
  { portal_session_id: w.viewSession },
];

/** What the token may do where it aims at its own queue and nothing else (checked above). */
const ALLOWED_ON_ITS_QUEUE = new Set(["GET /v1/queues/:queue_id/listeners", "POST /v1/queues/:queue_id/listeners", "POST /v1/queues/:queue_id/filter_test", "GET /v1/listeners"]);

function bodyFor(method: string, route: string, ids: Record<string, string>): unknown {
  if (method !== "POST" && method !== "PUT") return undefined;
  if (route.endsWith("/replay")) return { since: 0 };
  if (route.endsWith("/redeliver")) return {};
  if (route.endsWith("/test") || route.endsWith("/rotate")) return undefined;
  if (route.endsWith("/portal_sessions")) return { queue_id: ids.queue_id ?? w.queue };
  if (route.endsWith("/filter_test")) return { filter: { names: ["m"] } };
  const text = JSON.stringify(template(method, route)).replace(/\{(\w+)\}/g, (_, name: string) =>
    name === "n" ? crypto.randomUUID().slice(0, 8) : name === "notify" ? hook : name === "queue" ? (ids.queue_id ?? w.otherQueue) : name);
  return JSON.parse(text);
}

/** Every route by its own method, with every set of ids its path can take (each once). */
function attempts(allow: (method: string, route: string, ids: Record<string, string>) => boolean) {
  const seen = new Set<string>();
  const out: { method: string; route: string; path: string; body: unknown }[] = [];
  for (const { method, path: route } of appRoutes()) {
    if (!route.startsWith("/v1/") || route === "/v1/openapi.json") continue;
    for (const ids of TARGETS()) {
      const names = [...route.matchAll(/:(\w+)/g)].map((m) => m[1]!);
      if (names.some((n) => !(n in ids))) continue;
      const path = route.replace(/:(\w+)/g, (_, n: string) => ids[n]!);
      if (seen.has(`${method} ${path}`) || !allow(method, route, ids)) continue;
      seen.add(`${method} ${path}`);
      out.push({ method, route, path, body: bodyFor(method, route, ids) });
    }
  }
  return out;
}

async function expectRefused(key: string, tries: ReturnType<typeof attempts>) {
  const before = await snapshot();
  const wrong: string[] = [];
  for (const t of tries) {
    const r = await call(t.method, t.path, { key, body: t.body });
    const json = r.body && r.body.status === r.status && typeof r.body.title === "string";
    if (![403, 404].includes(r.status) || !json) wrong.push(`${t.method} ${t.path} -> ${r.status} ${r.text.slice(0, 160)}`);
  }
  expect(wrong).toEqual([]);
  expect(await snapshot()).toEqual(before);
}

describe("what a portal token may not reach", () => {
  test("every route aimed at other queues, listeners, messages, keys, sessions and organizations: 403 or 404, nothing changed", async () => {
    const tries = attempts((method, route, ids) => {
      const own = (!route.includes(":queue_id") || ids.queue_id === w.queue) && !route.includes(":listener_id") && !route.includes(":message_id");
      return !(own && ALLOWED_ON_ITS_QUEUE.has(`${method} ${route}`));
    });
    // Routes without ids: the organization's lists and writes (its own listeners' list is allowed, above).
    expect(tries.length).toBeGreaterThan(100);
    await expectRefused(w.token, tries);
  }, 60_000);

  test("a view-only token cannot write, not even to the listeners it may read", async () => {
    const own = { queue_id: w.queue, listener_id: w.mine, message_id: w.message, schema_id: w.schemaId, portal_session_id: w.viewSession, api_key_id: w.apiKey, api_client_id: w.org };
    const writes = appRoutes()
      .filter((r) => r.path.startsWith("/v1/") && ["POST", "PUT", "DELETE"].includes(r.method))
      .map(({ method, path: route }) => ({ method, route, path: route.replace(/:(\w+)/g, (_, n: string) => own[n as keyof typeof own]), body: bodyFor(method, route, own) }));
    await expectRefused(w.viewToken, writes.filter((t) => !t.route.endsWith("/filter_test")));
    // filter_test writes nothing: against a message of the request it answers, like any read.
    expect((await call("POST", `/v1/queues/${w.queue}/filter_test`, { key: w.viewToken, body: { filter: {}, message: { name: "x", data: {} } } })).status).toBe(200);
    expect((await call("GET", `/v1/queues/${w.queue}/listeners/${w.theirs}/deliveries`, { key: w.viewToken })).status).toBe(200);
  }, 60_000);
});
