/**
 * The portal session API (docs/portal.md) over HTTPS: making a session with every field and with none, each rule
 * a body can break (a JSON 422 naming the field, nothing stored), the limits at their edges, paged lists without
 * tokens, revoking, who may do which, the token's rate limit and lockout, and the portal page's headers and its
 * public session state. Expiry is tested with a clock the test moves (src/modules/portal-sessions/expiry.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cli, startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout;
let otherKey: string;
const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
const hook = `http://127.0.0.1:${receiver.port}/hook`;
const label = () => crypto.randomUUID().slice(0, 8);

beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000/1m:1s" } });
  const made = await cli(["orgs", "create", `com.example.portal-${label()}`], { FANOUT_DB: fanout.dbPath });
  otherKey = made.stdout.match(/owner key:\s+(\S+)/)![1]!;
});
afterAll(async () => {
  await fanout.stop();
  receiver.stop(true);
});

const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call("h1", method, path, opts);
const ok = async (method: string, path: string, body?: unknown, key?: string, expected = 200) => {
  const r = await call(method, path, { body, key });
  if (r.status !== expected) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
};
const queue = async (key?: string) => (await ok("POST", "/v1/queues", { name: `q-${label()}` }, key)).queue.id as string;
const listener = async (q: string, key?: string) =>
  (await ok("POST", `/v1/queues/${q}/listeners`, { name: `l-${label()}`, notify_url: hook, liveness_url: hook }, key)).listener.id as string;
const create = (body: unknown, key?: string) => call("POST", "/v1/portal_sessions", { body, key });
const tokenOf = (url: string) => url.split("#")[1]!;
/** Portal session events only: listeners' first probes record events of their own meanwhile. */
const eventCount = async () => (await ok("GET", "/v1/events?limit=1000")).events.filter((e: { type: string }) => e.type.startsWith("portal_session")).length as number;
const sessionCount = async () => Number((await call("GET", "/v1/portal_sessions?per_page=1")).headers.get("x-total-count"));

describe("making a portal session", () => {
  test("with every field: 201, the session as asked, and its url carrying the token once", async () => {
    const q = await queue();
    const l = await listener(q);
    const before = Date.now();
    const r = await create({
      queue_id: q, listener_ids: [l], can_manage: false, expires_in: 600, allowed_origins: ["https://app.example.com/", "http://127.0.0.2:8080"],
      branding: { name: "Acme", logo_url: "https://cdn.example.com/logo.svg", accent: "#0F766E" }, return_url: "https://app.example.com/account",
    });
    expect(r.status).toBe(201);
    const s = r.body.portal_session;
    expect(s).toMatchObject({
      queue_id: q, listener_ids: [l], can_manage: false, status: "active", revoked_at: null, allowed_origins: ["https://app.example.com", "http://127.0.0.2:8080"],
      branding: { name: "Acme", logo_url: "https://cdn.example.com/logo.svg", accent: "#0f766e" }, return_url: "https://app.example.com/account",
    });
    expect(s.id).toMatch(/^ps_/);
    expect(s.expires_at - s.created_at).toBe(600_000);
    expect(s.created_at).toBeGreaterThanOrEqual(before - 1000);
    expect(s.url).toMatch(new RegExp(`^${fanout.url}/portal/${s.id}#fop_[0-9A-Za-z]{43}$`));
    expect(r.body._links.self.href).toBe(`${fanout.url}/v1/portal_sessions/${s.id}`);
    const again = await ok("GET", `/v1/portal_sessions/${s.id}`);
    const { url: _url, ...stored } = s;
    expect(again.portal_session).toEqual(stored);
    expect(JSON.stringify(again)).not.toContain(tokenOf(s.url));
  });

  test("with only a queue: every listener, managing, an hour, no origin, no branding", async () => {
    const q = await queue();
    const s = (await create({ queue_id: q })).body.portal_session;
    expect(s).toMatchObject({ listener_ids: null, can_manage: true, allowed_origins: [], branding: { name: null, logo_url: null, accent: null }, return_url: null });
    expect(s.expires_at - s.created_at).toBe(3_600_000);
    const events = (await ok("GET", "/v1/events?limit=1000")).events;
    const added = events.find((e: { type: string; portal_session?: { id: string } }) => e.type === "portal_session_added" && e.portal_session?.id === s.id);
    expect(added).toMatchObject({ api_key: { name: "owner" }, queue: { id: q }, listener: null, message: null });
  });

  test("each broken rule is a JSON 422 naming its field, and nothing is stored", async () => {
    const q = await queue();
    const mine = await listener(q);
    const elsewhere = await listener(await queue());
    const big = `data:image/png;base64,${"A".repeat(Math.ceil((64 * 1024 + 1) / 3) * 4)}`;
    const cases: [unknown, string][] = [
      [{ listener_ids: [mine, elsewhere] }, "/listener_ids/1"],
      [{ listener_ids: [mine, mine] }, "/listener_ids/1"],
      [{ listener_ids: Array.from({ length: 101 }, (_, i) => `lst_${i}`) }, "/listener_ids"],
      [{ expires_in: 59 }, "/expires_in"],
      [{ expires_in: 86_401 }, "/expires_in"],
      [{ allowed_origins: ["http://app.example.com"] }, "/allowed_origins/0"],
      [{ allowed_origins: ["https://app.example.com/path"] }, "/allowed_origins/0"],
      [{ allowed_origins: ["https://*.example.com"] }, "/allowed_origins/0"],
      [{ allowed_origins: ["https://a.example.com?x=1"] }, "/allowed_origins/0"],
      [{ allowed_origins: ["javascript:alert(1)"] }, "/allowed_origins/0"],
      [{ allowed_origins: Array.from({ length: 11 }, (_, i) => `https://a${i}.example.com`) }, "/allowed_origins"],
      [{ branding: { name: "" } }, "/branding/name"],
      [{ branding: { name: "x".repeat(61) } }, "/branding/name"],
      [{ branding: { logo_url: "http://cdn.example.com/logo.png" } }, "/branding/logo_url"],
      [{ branding: { logo_url: "data:text/html;base64,PGI+" } }, "/branding/logo_url"],
      [{ branding: { logo_url: big } }, "/branding/logo_url"],
      [{ branding: { accent: "red" } }, "/branding/accent"],
      [{ branding: { accent: "#12345" } }, "/branding/accent"],
      [{ return_url: "http://app.example.com/" }, "/return_url"],
      [{ return_url: "javascript:alert(1)" }, "/return_url"],
    ];
    const [events, sessions] = [await eventCount(), await sessionCount()];
    for (const [fields, path] of cases) {
      const r = await create({ queue_id: q, ...(fields as object) });
      expect({ fields, status: r.status, paths: r.body?.errors?.map((e: { path: string }) => e.path) }).toEqual({ fields, status: 422, paths: [path] });
      expect(r.body).toMatchObject({ title: "Unprocessable Entity", status: 422, detail: expect.any(String) });
    }
    // The shape is the model's: 400.
    for (const body of [{ queue_id: q, extra: 1 }, { queue_id: q, expires_in: "60" }, { queue_id: q, branding: { color: "#000000" } }, {}, { queue_id: q, listener_ids: "all" }]) {
      expect({ body, status: (await create(body)).status }).toEqual({ body, status: 400 });
    }
    expect((await create({ queue_id: "q_none" })).status).toBe(404);
    expect([await eventCount(), await sessionCount()]).toEqual([events, sessions]);
  });

  test("the limits are inclusive: 60 s and 24 h, 10 origins, 60 characters, a 64 KB image; http on loopback only", async () => {
    const q = await queue();
    const image = `data:image/png;base64,${"A".repeat((64 * 1024) / 3 * 4 - 4)}AA==`;
    expect(Buffer.from(image.split(",")[1]!, "base64").length).toBeLessThanOrEqual(64 * 1024);
    const accepted = [
      { expires_in: 60 }, { expires_in: 86_400 },
      { allowed_origins: Array.from({ length: 10 }, (_, i) => `https://a${i}.example.com:${8000 + i}`) },
      { allowed_origins: ["http://localhost:3000", "http://127.0.0.2", "http://[::1]:8080", "https://[2001:db8::1]"] },
      { branding: { name: "é".repeat(59) + "🙂", logo_url: image } },
      { branding: { logo_url: `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg"/>')}` } },
    ];
    for (const fields of accepted) expect({ fields, status: (await create({ queue_id: q, ...fields })).status }).toEqual({ fields, status: 201 });
  });
});

describe("who may make, list and revoke sessions", () => {
  test("a key that may write the queue's listeners; lists show the queues it may write", async () => {
    const [q1, q2] = [await queue(), await queue()];
    const key = async (scopes: unknown) => (await ok("POST", "/v1/api_keys", { name: `k-${label()}`, scopes })).api_key as string;
    const writer = await key([{ resource: "listeners", access: "write", targets: [q1] }]);
    const reader = await key([{ resource: "listeners", access: "read", targets: ["*"] }]);
    const s1 = (await create({ queue_id: q1 }, writer)).body.portal_session;
    expect(s1.queue_id).toBe(q1);
    expect((await create({ queue_id: q2 }, writer)).status).toBe(403);
    expect((await create({ queue_id: q1 }, reader)).status).toBe(403);
    const s2 = (await create({ queue_id: q2 })).body.portal_session;
    const listed = (await ok("GET", "/v1/portal_sessions?per_page=100", undefined, writer)).portal_sessions.map((s: { id: string }) => s.id);
    expect(listed).toEqual([s1.id]);
    expect((await call("GET", "/v1/portal_sessions", { key: reader })).status).toBe(403);
    expect((await call("GET", `/v1/portal_sessions/${s2.id}`, { key: writer })).status).toBe(403);
    expect((await call("DELETE", `/v1/portal_sessions/${s2.id}`, { key: writer })).status).toBe(403);
    expect((await call("DELETE", `/v1/portal_sessions/${s1.id}`, { key: writer })).status).toBe(200);
  });

  test("another organization's sessions are unknown", async () => {
    const s = (await create({ queue_id: await queue() })).body.portal_session;
    expect((await call("GET", `/v1/portal_sessions/${s.id}`, { key: otherKey })).status).toBe(404);
    expect((await call("DELETE", `/v1/portal_sessions/${s.id}`, { key: otherKey })).status).toBe(404);
    expect((await create({ queue_id: s.queue_id }, otherKey)).status).toBe(404);
    expect((await ok("GET", "/v1/portal_sessions", undefined, otherKey)).portal_sessions.map((x: { id: string }) => x.id)).not.toContain(s.id);
  });

  test("a portal token reads its own session and nothing else of sessions", async () => {
    const q = await queue();
    const s = (await create({ queue_id: q })).body.portal_session;
    const other = (await create({ queue_id: q })).body.portal_session;
    const token = tokenOf(s.url);
    expect((await ok("GET", `/v1/portal_sessions/${s.id}`, undefined, token)).portal_session.id).toBe(s.id);
    expect((await call("GET", `/v1/portal_sessions/${other.id}`, { key: token })).status).toBe(404);
    expect((await call("GET", "/v1/portal_sessions", { key: token })).status).toBe(403);
    expect((await create({ queue_id: q }, token)).status).toBe(403);
    expect((await call("DELETE", `/v1/portal_sessions/${s.id}`, { key: token })).status).toBe(403);
    expect((await ok("GET", `/v1/portal_sessions/${s.id}`)).portal_session.status).toBe("active");
  });
});

test("lists are paged, newest last, with the total and links, and never carry a token", async () => {
  const q = await queue();
  const made = [];
  for (let i = 0; i < 3; i++) made.push((await create({ queue_id: q })).body.portal_session);
  const total = await sessionCount();
  const last = await call("GET", `/v1/portal_sessions?per_page=2&page=${Math.ceil(total / 2)}`);
  expect(last.headers.get("x-total-count")).toBe(String(total));
  expect(last.headers.get("link")).toContain('rel="first"');
  expect(last.body.portal_sessions.at(-1).id).toBe(made.at(-1).id);
  const all = await call("GET", "/v1/portal_sessions?per_page=100");
  for (const s of made) expect(all.text).not.toContain(tokenOf(s.url));
  expect(all.text).not.toContain("fop_");
  expect(all.text).not.toContain('"url"');
});

test("revoking ends the token at once; the session stays listed as revoked; a second revoke changes nothing", async () => {
  const q = await queue();
  const s = (await create({ queue_id: q, return_url: "https://app.example.com/back" })).body.portal_session;
  const token = tokenOf(s.url);
  expect((await call("GET", `/v1/queues/${q}/listeners`, { key: token })).status).toBe(200);
  const revoked = await call("DELETE", `/v1/portal_sessions/${s.id}`);
  expect(revoked.status).toBe(200);
  expect(revoked.text).toBe("");
  const refused = await call("GET", `/v1/queues/${q}/listeners`, { key: token });
  expect(refused.body).toEqual({ title: "Unauthorized", status: 401, detail: "The portal link is unknown, expired or revoked." });
  const after = (await ok("GET", `/v1/portal_sessions/${s.id}`)).portal_session;
  expect([after.status, typeof after.revoked_at]).toEqual(["revoked", "number"]);
  const events = await eventCount();
  expect((await call("DELETE", `/v1/portal_sessions/${s.id}`)).status).toBe(200);
  expect((await ok("GET", `/v1/portal_sessions/${s.id}`)).portal_session.revoked_at).toBe(after.revoked_at);
  expect(await eventCount()).toBe(events);
  const deleted = (await ok("GET", "/v1/events?limit=1000")).events.filter((e: { type: string }) => e.type === "portal_session_deleted").at(-1);
  expect(deleted).toMatchObject({ api_key: { name: "owner" }, queue: { id: q }, portal_session: { id: s.id } });
  expect((await call("DELETE", "/v1/portal_sessions/ps_none")).status).toBe(404);
});

describe("the portal page", () => {
  const page = (path: string, method = "GET") => fetch(`${fanout.url}${path}`, { method, tls: { rejectUnauthorized: false } });
  const ancestors = (r: Response) => r.headers.get("content-security-policy")?.match(/frame-ancestors ([^;]+)/)?.[1];

  test("is framed only by the session's origins while it is active, and never sends X-Frame-Options", async () => {
    const q = await queue();
    const s = (await create({ queue_id: q, allowed_origins: ["https://app.example.com", "http://localhost:3000"] })).body.portal_session;
    const bare = (await create({ queue_id: q })).body.portal_session;
    const r = await page(`/portal/${s.id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toStartWith("text/html");
    expect(ancestors(r)).toBe("https://app.example.com http://localhost:3000");
    expect(r.headers.get("x-frame-options")).toBeNull();
    expect(r.headers.get("set-cookie")).toBeNull();
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await r.text()).toContain('src="/ui/');
    expect(ancestors(await page(`/portal/${bare.id}`))).toBe("'none'");
    expect(ancestors(await page("/portal/ps_unknown"))).toBe("'none'");
    expect(ancestors(await page(`/portal/${s.id}/queues/${q}/messages/msg_1`))).toBe("https://app.example.com http://localhost:3000");
    await ok("DELETE", `/v1/portal_sessions/${s.id}`);
    expect(ancestors(await page(`/portal/${s.id}`))).toBe("'none'");
  });

  test("its public state says how the session stands, how it looks and where back is, and nothing secret", async () => {
    const q = await queue();
    const s = (await create({ queue_id: q, return_url: "https://app.example.com/back", branding: { name: "Acme" }, allowed_origins: ["https://app.example.com"] })).body.portal_session;
    const r = await page(`/portal/${s.id}/session`);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(await r.json()).toEqual({ status: "active", branding: { name: "Acme", logo_url: null, accent: null }, return_url: "https://app.example.com/back" });
    await ok("DELETE", `/v1/portal_sessions/${s.id}`);
    expect(((await (await page(`/portal/${s.id}/session`)).json()) as { status: string }).status).toBe("revoked");
    const unknown = await page("/portal/ps_unknown/session");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ title: "Not Found", status: 404 });
    expect((await page(`/portal/${s.id}`, "POST")).status).toBe(405);
    expect((await page("/portal/")).status).toBe(404);
    expect((await page(`/portal/${s.id}/app.js`)).status).toBe(404);
    for (const odd of ["/portal/%zz", "/portal/%zz/session", `/portal/${"x".repeat(65)}`, "/portal/a%2Fb/session"]) {
      const r = await page(odd);
      expect({ odd, status: r.status, ancestors: ancestors(r) }).toEqual({ odd, status: 404, ancestors: "'none'" });
    }
  });
});

test("a portal token has its own rate limit, and refused tokens count toward the lockout", async () => {
  const limited = await startFanout({ env: { FANOUT_RATE_LIMIT: "3", FANOUT_LOCKOUT: "2/1m:1m" } });
  try {
    const q = (await limited.call("h1", "POST", "/v1/queues", { body: { name: "q" } })).body.queue.id;
    const s = (await limited.call("h1", "POST", "/v1/portal_sessions", { body: { queue_id: q } })).body.portal_session;
    const token = tokenOf(s.url);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await limited.call("h1", "GET", `/v1/queues/${q}/listeners`, { key: token })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await limited.call("h1", "GET", "/v1/queues")).status).toBe(200); // the owner key counts apart
    const wrong = `${token.slice(0, -1)}${token.endsWith("a") ? "b" : "a"}`;
    expect((await limited.call("h1", "GET", "/v1/queues", { key: wrong })).status).toBe(401);
    expect((await limited.call("h1", "GET", "/v1/queues", { key: wrong })).status).toBe(401);
    const locked = await limited.call("h1", "GET", "/v1/queues", { key: token });
    expect(locked.status).toBe(403);
    expect(locked.headers.get("retry-after")).not.toBeNull();
  } finally {
    await limited.stop();
  }
});
