/**
 * A seeded, deterministic fuzz run over the whole HTTP surface (fuzz-cases.ts): every route of the app by every
 * method with each kind of key, the unprefixed paths, /healthz, the API description and unknown paths, odd query
 * numbers, bodies, headers and hosts (bad ports among them), over HTTP/1.1 (raw bytes) and HTTP/2. It fails on any
 * 5xx, any request left without an answer that fanout could have answered, and any error whose body is not JSON
 * `{ title, status }` with the HTTP status. Each failure names the seed, its number and the request: `FUZZ_SEED=<seed>` replays a run.
 * It runs the compiled binary, which is what ships and what differs (a minified Elysia); `npm test` builds it
 * first, a direct run builds it when missing, and `FUZZ_TARGET=source` runs `bun src/main.ts` instead.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import { PROTOS, ROOT, cli, startFanout, type Fanout, type Proto } from "./harness.ts";
import { BUN_UNKNOWN_METHODS, appRoutes, fuzzCases, type Case, type KeyKind } from "./fuzz-cases.ts";
import { H1Connection, H2Client, TIMEOUT_MS, requestBytes, type Outcome } from "./raw.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);

let fanout: Fanout;
let otherKey: string;
const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });

beforeAll(async () => {
  const binary = process.env.FUZZ_TARGET === "source" ? undefined : join(ROOT, "dist/fanout");
  if (binary && !existsSync(binary)) await $`${process.execPath} ${join(ROOT, "scripts/build.ts")}`.cwd(ROOT).quiet();
  // Hundreds of requests carry no key or a bad one: the lockout would turn the rest into 403s, the rate limit into 429s.
  fanout = await startFanout({ binary, env: { FANOUT_LOCKOUT: "1000000/1m:1s", FANOUT_RATE_LIMIT: "0" } });
  const made = await cli(["orgs", "create", "com.example.fuzz-other"], { FANOUT_DB: fanout.dbPath });
  expect(made.code).toBe(0);
  otherKey = made.stdout.match(/owner key:\s+(\S+)/)![1]!;
}, 120_000);
afterAll(async () => {
  await fanout?.stop();
  receiver.stop(true);
});

type World = Record<string, string>;

/** The resources the run's ids point at, made anew for each protocol (a DELETE of the last run removed some). */
async function makeWorld(proto: Proto): Promise<World> {
  const call = async (method: string, path: string, body: unknown, key = fanout.key) => {
    const reply = await fanout.call(proto, method, path, { body, key });
    if (reply.status !== 200) throw new Error(`setup ${method} ${path}: ${reply.status} ${reply.text}`);
    return reply.body;
  };
  const notify = `http://127.0.0.1:${receiver.port}/hook`;
  const tag = crypto.randomUUID().slice(0, 8);
  const queue = (await call("POST", "/v1/queues", { name: `fuzz-${tag}` })).queue.id;
  const schemaQueue = (await call("POST", "/v1/queues", { name: `fuzz-s-${tag}`, schema: { n: { type: "number" } } })).queue;
  const listener = (await call("POST", `/v1/queues/${queue}/listeners`, { name: "l", notify_url: notify, liveness_url: notify })).listener.id;
  const message = (await call("POST", `/v1/queues/${queue}/messages`, { name: "m", data: { n: 1 } })).message.id;
  const scoped = await call("POST", "/v1/api_keys", { name: `scoped-${tag}`, scopes: [{ resource: "messages", access: "write", targets: [queue] }, { resource: "queues", access: "read", targets: ["*"] }] });
  const otherQueue = (await call("POST", "/v1/queues", { name: `other-${tag}` }, otherKey)).queue.id;
  const otherListener = (await call("POST", `/v1/queues/${otherQueue}/listeners`, { name: "l", notify_url: notify, liveness_url: notify }, otherKey)).listener.id;
  const org = (await call("GET", "/v1/events?limit=1", undefined)).events[0].client.id;
  const otherOrg = (await call("GET", "/v1/events?limit=1", undefined, otherKey)).events[0].client.id;
  const session = async (body: unknown, key?: string) => {
    const reply = await fanout.call(proto, "POST", "/v1/portal_sessions", { body, key: key ?? fanout.key });
    if (reply.status !== 201) throw new Error(`setup portal session: ${reply.status} ${reply.text}`);
    return reply.body.portal_session;
  };
  const portal = await session({ queue_id: queue, listener_ids: [listener] });
  const otherPortalSession = (await session({ queue_id: otherQueue }, otherKey)).id;
  return {
    queue, schemaQueue: schemaQueue.id, schemaId: schemaQueue.schema_id, listener, message, scopedKeyId: scoped.id, scopedKey: scoped.api_key, otherQueue,
    otherListener, org, otherOrg, notify, portalSession: portal.id, portalToken: portal.url.split("#")[1], otherPortalSession,
  };
}

let counter = 0;
function fill(text: string, world: World): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => {
    if (name === "n") return String(++counter);
    if (name === "uuid") return crypto.randomUUID();
    return world[name] ?? whole;
  });
}

function keyOf(kind: KeyKind, world: World): string | undefined {
  return { owner: fanout.key, other: otherKey, scoped: world.scopedKey, portal: world.portalToken, none: undefined, garbage: "fo_" + "z".repeat(40) }[kind];
}

/** Sends one case; `refused` when node:http2 will not send it (the client does not let you). */
async function send(proto: Proto, c: Case, world: World, h1: H1Connection, h2: H2Client): Promise<Outcome | "refused"> {
  const target = fill(c.target, world);
  const body = c.body === undefined ? undefined : fill(c.body, world);
  const key = keyOf(c.key, world);
  const headers: [string, string][] = [...c.headers.map(([k, v]) => [k, fill(v, world)] as [string, string]), ...(key ? [["x-api-key", key] as [string, string]] : [])];
  if (proto === "h2") return h2.send({ ":method": c.method, ":path": target, ...(c.host ? { ":authority": c.host } : {}), ...Object.fromEntries(headers) }, body);
  const length = body === undefined ? 0 : Buffer.byteLength(body) - (c.shortBy ?? 0);
  const framing: [string, string][] = [["host", c.host ?? "localhost"], ...(body !== undefined || c.method === "PUT" ? [["content-length", String(length)] as [string, string]] : [])];
  // A body longer than its Content-Length leaves bytes Bun reads as a next request: such a connection is not reused.
  const outcome = await h1.send(requestBytes(c.method, target, [...framing, ...headers], body), c.method === "HEAD");
  if (c.shortBy) h1.close();
  return outcome;
}

/** Why an answer breaks the rule, or null. Bun's own refusals (docs/security.md) are not fanout's to answer. */
function fault(c: Case, proto: Proto, o: Outcome): string | null {
  if (BUN_UNKNOWN_METHODS.has(c.method)) {
    const bunRefusal = proto === "h1" ? o.ending === "closed" && !o.status : o.status === 501 && o.text === "";
    return bunRefusal || isJsonError(o) ? null : "an unknown method is neither Bun's refusal nor a JSON error";
  }
  // RFC 9113 §8.2.1: a field value with whitespace at either end makes an HTTP/2 request malformed; Bun resets it.
  if (proto === "h2" && c.headers.some(([, v]) => v !== v.trim()) && o.ending === "reset") return null;
  // The bytes past a short Content-Length are a next request that Bun cannot parse: it answers that one with an
  // empty 400 (or 431, when they run past its limit on a request head) and closes the connection, which may come
  // before (and cut off) fanout's answer to this one.
  if (c.shortBy && (o.status === 400 || o.status === 431) && o.text === "") return null;
  if (o.ending !== "answered") return `no answer (${o.ending})`;
  if (o.status >= 500) return `status ${o.status}`;
  if (o.status >= 400 && c.method !== "HEAD" && !isJsonError(o)) return "an error without a JSON { title, status } body";
  if (o.status < 200 || (o.status >= 300 && o.status < 400)) return `status ${o.status}`;
  if (o.status < 300 && o.text !== "" && !isJson(o.text)) return "a success whose body is not JSON";
  return null;
}

const isJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false; // the caller reports the body
  }
};
const isJsonError = (o: Outcome) => isJson(o.text) && typeof JSON.parse(o.text).title === "string" && JSON.parse(o.text).status === o.status;

function describeCase(seed: number, index: number, proto: Proto, c: Case, o: Outcome | null, why: string): string {
  const body = c.body === undefined ? "" : ` body(${c.body.length}${c.shortBy ? `, length ${c.shortBy} short` : ""}) ${JSON.stringify(c.body.slice(0, 160))}`;
  const answer = o ? ` -> ${o.status || o.ending} ${o.text.slice(0, 200)}` : "";
  return `seed ${seed} #${index} ${proto}: ${c.method} ${c.target.slice(0, 200)}${c.host === undefined ? "" : ` host=${JSON.stringify(c.host)}`} key=${c.key} headers=${JSON.stringify(c.headers).slice(0, 200)}${body}${answer} :: ${why}`;
}

for (const proto of PROTOS) {
  test(`fuzz over ${proto}: no 5xx, no dropped request, every error JSON (seed ${SEED})`, async () => {
    const cases = fuzzCases(SEED, appRoutes());
    const world = await makeWorld(proto);
    const h1 = new H1Connection(fanout.url);
    const h2 = new H2Client(fanout.url);
    const failures: string[] = [];
    const statuses: Record<string, number> = {};
    let sent = 0;
    try {
      for (const [index, c] of cases.entries()) {
        if (proto === "h2" && c.shortBy) continue; // node:http2 sends what it is given; a mismatch is a stream error
        const outcome = await send(proto, c, world, h1, h2);
        if (outcome === "refused") continue;
        sent++;
        statuses[outcome.status || outcome.ending] = (statuses[outcome.status || outcome.ending] ?? 0) + 1;
        const why = fault(c, proto, outcome);
        if (why) failures.push(describeCase(SEED, index, proto, c, outcome, why));
        // A server that holds requests answers the rest late or not at all: stop rather than wait out every one.
        if ((statuses.timeout ?? 0) >= 3) {
          failures.push(`seed ${SEED}: stopped after #${index}, the third request without an answer in ${TIMEOUT_MS} ms`);
          break;
        }
      }
    } finally {
      h1.close();
      h2.close();
    }
    console.log(`fuzz ${proto}: seed ${SEED}, ${sent} of ${cases.length} requests sent, ${failures.length} failed; answers ${JSON.stringify(statuses)}`);
    expect(sent).toBeGreaterThan(cases.length * 0.9);
    expect(failures).toEqual([]);
  }, 240_000);
}
