/**
 * The requests of the fuzz run (fuzz.test.ts), made from a seed and the app's route list alone, so one seed gives
 * the same run every time. Ids and URLs the server hands out are written as placeholders (`{queue}`, `{notify}`)
 * and filled in when the request is sent.
 */
import { buildApp } from "../../src/http/app.ts";
import { loadConfig } from "../../src/config.ts";

/** mulberry32: small, fast, and the same sequence for a seed on every platform. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type KeyKind = "owner" | "other" | "scoped" | "portal" | "none" | "garbage";
export type Case = {
  method: string;
  target: string; // path and query, placeholders unfilled
  headers: [string, string][];
  body?: string;
  key: KeyKind;
  /** HTTP/1.1 only: a Content-Length this many bytes short of the body. */
  shortBy?: number;
  /** The Host header (HTTP/1.1) or :authority (HTTP/2); the client's own when absent. */
  host?: string;
};

/** Methods Bun refuses itself (docs/security.md): no answer over HTTP/1.1, an empty 501 over HTTP/2. */
export const BUN_UNKNOWN_METHODS = new Set(["FOO", "get"]);
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
const RARE_METHODS = ["PROPFIND", "TRACE", "QUERY", ...BUN_UNKNOWN_METHODS];
const KEYS: KeyKind[] = ["owner", "other", "scoped", "portal", "none"];

/** Path parameters: the resources the run made, another organization's, and ids that name nothing. */
const REAL: Record<string, string[]> = {
  queue_id: ["{queue}", "{queue}", "{schemaQueue}", "{otherQueue}"],
  listener_id: ["{listener}", "{listener}", "{otherListener}"],
  message_id: ["{message}", "{message}"],
  schema_id: ["{schemaId}", "{schemaId}"],
  api_key_id: ["{scopedKeyId}", "{scopedKeyId}"],
  api_client_id: ["{org}", "{org}", "{otherOrg}"],
  portal_session_id: ["{portalSession}", "{portalSession}", "{otherPortalSession}"],
};
const FAKE_IDS = ["q_0000000000000000000", "0", "-1", "1e20", "x".repeat(300), "%00", "%2F", "%zz", "..", "%C3%A9", "a%20b", "%F0%9F%99%82", "null", "%5B%5D", "*"];

const NUMBERS = ["0", "-1", "1e20", "99999999999999999999", "NaN", "", "abc", "1.5", "x".repeat(4000), "%00", "Infinity", "-0", "0x10", "%20", "1,2", "[]"];
const QUERY_NAMES = ["page", "per_page", "limit", "startAfter", "startAfterId", "events", "pretty"];

const CONTENT_TYPES = ["application/json; charset=utf-8", "APPLICATION/JSON", "text/plain", "application/x-www-form-urlencoded", "application/vnd.api+json", "", "application/json;;;", "multipart/form-data; boundary=x", "application/jsonx"];
const ACCEPTS = ["application/json", "*/*", "text/html", "application/json;q=0", "", "garbage", "application/*;q=0.5, text/html", "text/*"];
/** Hosts Bun takes into the URL though no URL parser would (bad ports), and others it cannot use or routes oddly. */
const BAD_PORT_HOSTS = ["example.com:65536", "example.com:99999", "example.com:-1", "example.com:abc", "[::1]:70000", "example.com:1:2", "[::1"];
const ODD_HOSTS = [...BAD_PORT_HOSTS, "example.com:", "bücher.de", "a b", "x", "a:1", "[::1]", "api.example.com:8443"];
const IDEMPOTENCY_KEYS = ["k-1", "k-1", "", "x".repeat(256), "a b", "\tk", "{uuid}"];

/** The app's own route list: a route added to the app is fuzzed (and walked, bodiless.test.ts) without a change here. */
export function appRoutes(): { method: string; path: string }[] {
  const app = buildApp({ store: {} as never, config: loadConfig({}, []).config, clock: { now: () => 0 } as never, log: console as never, version: "fuzz", nudge: () => undefined });
  return app.routes.map((r) => ({ method: r.method, path: r.path }));
}

/** A body the route takes, to mutate; placeholders are filled when sent. */
export function template(method: string, route: string): Record<string, unknown> {
  if (route.endsWith("/listeners") || route.endsWith("/listeners/:listener_id")) {
    return {
      name: "l-{n}", notify_url: "{notify}", liveness_url: "{notify}", filter: { names: ["m-*"], data: { n: { $gte: 1 } } },
      headers: { "x-token": "t-{n}" }, rate_limit: 50, ordering: "unordered",
    };
  }
  if (route.endsWith("/portal_sessions")) {
    return {
      queue_id: "{queue}", listener_ids: ["{listener}"], can_manage: true, expires_in: 600, allowed_origins: ["https://app.example.com"],
      branding: { name: "Acme {n}", logo_url: "https://cdn.example.com/logo.png", accent: "#0f766e" }, return_url: "https://app.example.com/back",
    };
  }
  if (route.endsWith("/replay")) return { since: 0, only: "all" };
  if (route.endsWith("/filter_test")) return { filter: { names: ["m-*"] }, message: { name: "m-{n}", data: { n: 1 } } };
  if (route.endsWith("/messages")) return { name: "m-{n}", data: { n: 1, s: "abc" } };
  if (route.endsWith("/messages/:message_id")) return { name: "m-{n}" };
  if (route.includes("/api_keys")) return { name: "k-{n}", status: "enabled", scopes: [{ resource: "queues", access: "read", targets: ["*"] }] };
  if (route.includes("/api_clients")) return { name: "com.example.renamed-{n}", events_queue_id: "{queue}" };
  if (route.endsWith("/queues") || route.endsWith("/queues/:queue_id")) return method === "PUT" ? { name: "q-{n}" } : { name: "q-{n}", schema: { n: { type: "number" }, s: { type: "string", max: 8 } } };
  return {};
}

function nested(depth: number, leaf: unknown, array: boolean): string {
  return (array ? "[" : '{"a":').repeat(depth) + JSON.stringify(leaf) + (array ? "]" : "}").repeat(depth);
}

/** One body: the template, or one of the ways a body goes wrong. */
function body(rnd: () => number, method: string, route: string): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const base = template(method, route);
  const field = pick(Object.keys(base).concat("data"));
  const odd = pick<unknown>([123, true, null, [], {}, "str", -1, 1.5, "", [1, "a"], { "": 1 }]);
  const kinds: (() => string)[] = [
    () => JSON.stringify(base),
    () => JSON.stringify(base),
    () => pick(["{", "abc", "nul", "{'a':1}", "\u0000", "", " ", "{}}", '{"a":}', "[,]", "\ufeff{}", "{\"a\":1,}"]),
    () => JSON.stringify(base).slice(0, Math.floor(rnd() * JSON.stringify(base).length)),
    () => nested(pick([65, 1000, 20_000]), base, rnd() < 0.5),
    () => JSON.stringify({ ...base, [field]: nested(pick([65, 500]), 1, true) }).replace(/"(\[+1\]+)"/, "$1"),
    () => JSON.stringify({ ...base, [field]: "x".repeat(pick([129, 10_000, 300_000])) }),
    () => JSON.stringify({ ...base, [field]: odd }),
    () => JSON.stringify({ ...base, [field]: pick(["é🙂\u202e", "\ud800", "a\u0000b", "\u0000", "\\", "<script>", "../../etc/passwd", "%00"]) }),
    () => JSON.stringify([base]),
    () => `{"__proto__":{"admin":true},"constructor":{"prototype":1},"extra":1${JSON.stringify(base).slice(1, -1).replace(/^(?=.)/, ",")}}`,
    () => pick(["1", '"s"', "null", "true", "1e400", "-0", "[]", "{}"]),
    () => `{"name":"a","name":1,"data":1,"data":{"x":1}}`,
    () => JSON.stringify({ ...base, scopes: [{ resource: pick(["api_keys", "subscriptions", "nope", "queues"]), access: pick(["write", "admin", ""]), targets: pick([["*"], "*", [], ["{queue}"], [1]]) }] }),
    () => JSON.stringify({ ...base, schema: pick([{}, { a: { type: "nope" } }, { a: { type: "object" } }, { a: { type: "string", min: 5, max: 1 } }, { a: { type: "string", pattern: "[" } }, nestedSchema(pick([10, 100]))]) }),
    () => JSON.stringify({ ...base, filter: pick(ODD_FILTERS) }),
    () => JSON.stringify({ ...base, headers: pick(ODD_HEADERS) }),
    () => JSON.stringify({ ...base, [pick(["rate_limit", "concurrency", "ordering", "events_queue_id"])]: pick<unknown>([0, -1, 10_001, 257, 1.5, "fifo", "lifo", null, "{queue}", "{otherQueue}", "q_none"]) }),
    () => JSON.stringify({ ...base, [pick(["expires_in", "allowed_origins", "branding", "listener_ids", "return_url"])]: pick(ODD_PORTAL) }),
  ];
  if (rnd() < 0.01) return JSON.stringify({ name: "big", data: "x".repeat(1_100_000) }); // over the body limit
  return pick(kinds)();
}

/** Filters and headers that break each rule the service checks (docs/api.md, "Listeners: filters and headers"). */
const ODD_FILTERS: unknown[] = [
  {}, null, "x", [], { names: [] }, { names: ["*"] }, { names: ["a".repeat(201)] }, { names: Array.from({ length: 51 }, (_, i) => `n${i}`) },
  { names: [1] }, { data: { $or: [] } }, { data: { a: { $gt: {} } } }, { data: { a: { $nope: 1 } } }, { data: { a: { $in: Array.from({ length: 101 }, (_, i) => i) } } },
  { data: { "a.b.c.d.e.f.g.h.i.j.k": 1 } }, { data: { "": 1 } }, { data: { "a..b": 1 } }, { data: { a: { $eq: 1, b: 2 } } },
  { data: { $not: { $not: { $not: { $not: { $not: { $not: { $not: { $not: { a: 1 } } } } } } } } } }, { data: { a: "x".repeat(9000) } },
  { data: { $and: Array.from({ length: 201 }, (_, i) => ({ [`k${i}`]: i })) } }, { names: ["*a*a*a*a*a*a*a*a*a*"], data: { s: { $contains: "a".repeat(100) } } },
  { data: { __proto__: { a: 1 }, constructor: 1 } }, { extra: 1 },
];
/** Values that break a portal session's rules (docs/portal.md) in each field they may land in. */
const ODD_PORTAL: unknown[] = [
  59, 86_401, 1e20, -1, [], ["*"], ["http://example.com"], ["https://a.example.com/x"], Array.from({ length: 11 }, (_, i) => `https://a${i}.example.com`),
  { name: "" }, { name: "x".repeat(61) }, { logo_url: "data:image/png;base64,!!" }, { logo_url: `data:image/png;base64,${"A".repeat(90_000)}` },
  { accent: "red" }, { accent: "#abc" }, ["{otherListener}"], ["{listener}", "{listener}"], "javascript:alert(1)", "https://", { extra: 1 },
];
const ODD_HEADERS: unknown[] = [
  {}, null, [], "x", { Host: "x" }, { "content-type": "x" }, { "Webhook-Id": "x" }, { "bad name": "x" }, { "x-a": "\u0000" }, { "x-a": "é" },
  { "x-a": "v".repeat(1025) }, { "x-a": "1", "X-A": "2" }, Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-${i}`, "v"])), { "x-a": 1 },
];

function nestedSchema(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { leaf: { type: "number" } };
  for (let i = 0; i < depth; i++) schema = { o: { type: "object", props: schema } };
  return schema;
}

function concrete(rnd: () => number, route: string): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  return route.replace(/:([a-z_]+)/g, (_, name: string) => (rnd() < 0.7 ? pick(REAL[name] ?? FAKE_IDS) : pick(FAKE_IDS)));
}

function query(rnd: () => number): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  if (rnd() < 0.45) return "";
  const parts = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => `${pick(QUERY_NAMES)}=${pick(NUMBERS)}`);
  return `?${parts.join("&")}`;
}

/** `odd`: how often a header is one of the odd variants, which mostly end a request before its route runs. */
function one(rnd: () => number, method: string, path: string, route: string, key: KeyKind, odd = 0.2): Case {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const headers: [string, string][] = [];
  const withBody = ["POST", "PUT", "PATCH"].includes(method) ? rnd() < 0.85 : rnd() < 0.1;
  const text = withBody ? body(rnd, method, route) : undefined;
  if (text !== undefined) headers.push(["content-type", rnd() < 1 - odd ? "application/json" : pick(CONTENT_TYPES)]);
  if (rnd() < odd) headers.push(["accept", pick(ACCEPTS)]);
  if (method === "POST" && rnd() < 0.2) headers.push(["idempotency-key", pick(IDEMPOTENCY_KEYS)]);
  const shortBy = text && text.length > 2 && rnd() < 0.05 ? 1 + Math.floor(rnd() * (text.length - 1)) : undefined;
  return { method, target: `${path}${query(rnd)}`, headers, body: text, key: rnd() < 0.02 ? "garbage" : key, shortBy };
}

const EXTRA_PATHS = ["/", "/v1", "/v1/", "/nope", "/v1/nope", "/v1/queues/{queue}/nope/x/y", "//v1//queues", "/v1/queues/", "/v1/%2e%2e/healthz", "/healthz/", "/v1/openapi"];

/**
 * Every route by every method with each kind of key, the unprefixed paths and unknown ones with one key each, rare
 * methods, then each route by its own method many times over with keys that pass the gate, so bodies and queries
 * reach the models and services, and once under a Host with a bad port; some requests under odd hosts; all in an
 * order of the seed's, DELETEs last so the resources they remove serve the rest first.
 */
export function fuzzCases(seed: number, routes: { method: string; path: string }[]): Case[] {
  const rnd = random(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const patterns = [...new Set(routes.map((r) => r.path))];
  const cases: Case[] = [];
  for (const route of patterns) {
    for (const method of METHODS) for (const key of KEYS) cases.push(one(rnd, method, concrete(rnd, route), route, key));
    const bare = route.startsWith("/v1/") ? route.slice(3) : null;
    if (bare) for (const method of METHODS) cases.push(one(rnd, method, concrete(rnd, bare), route, pick(KEYS)));
    cases.push(one(rnd, pick(RARE_METHODS), concrete(rnd, route), route, pick(KEYS)));
  }
  for (const path of EXTRA_PATHS) for (const method of METHODS) cases.push(one(rnd, method, path, path, pick(KEYS)));
  for (const route of routes) {
    for (let i = 0; i < 20; i++) cases.push(one(rnd, route.method, concrete(rnd, route.path), route.path, pick<KeyKind>(["owner", "owner", "owner", "scoped", "other", "portal"]), 0.05));
  }
  // Hosts come from a stream of their own, so the cases above stay what the seed gave before hosts were fuzzed.
  const hosts = random(seed ^ 0x5bd1e995);
  const host = <T>(xs: T[]) => xs[Math.floor(hosts() * xs.length)]!;
  for (const c of cases) if (hosts() < 0.05) c.host = host(ODD_HOSTS);
  for (const route of routes) cases.push({ ...one(hosts, route.method, concrete(hosts, route.path), route.path, "owner", 0), host: host(BAD_PORT_HOSTS) });
  for (let i = cases.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [cases[i], cases[j]] = [cases[j]!, cases[i]!];
  }
  return [...cases.filter((c) => c.method !== "DELETE"), ...cases.filter((c) => c.method === "DELETE")];
}
