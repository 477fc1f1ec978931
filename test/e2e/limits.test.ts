/**
 * Rate limiting and lockout (docs/delivery.md) end to end over HTTP/1.1 and
 * HTTP/2. Every client is on 127.0.0.1; with --trust-proxy the X-Forwarded-For header stands in for distinct
 * client addresses. Fresh keys come from `fanout orgs create`, which spends no request of any key's budget.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import https from "node:https";
import { PROTOS, cli, startFanout, waitFor, type Fanout, type Reply } from "./harness.ts";

const LIMIT = 5;
let limited: Fanout;
let guarded: Fanout;
let unlimited: Fanout;

beforeAll(async () => {
  [limited, guarded, unlimited] = await Promise.all([
    startFanout({ env: { FANOUT_RATE_LIMIT: String(LIMIT) } }),
    startFanout({ env: { FANOUT_LOCKOUT: "3/1m:2s", FANOUT_TRUST_PROXY: "on" } }),
    startFanout({ env: { FANOUT_RATE_LIMIT: "0" } }),
  ]);
});
afterAll(async () => void (await Promise.all([limited, guarded, unlimited].map((f) => f.stop()))));

/** The owner key of a new organization on `fanout`'s database. */
async function freshKey(fanout: Fanout): Promise<string> {
  const made = await cli(["orgs", "create", `com.example.k${crypto.randomUUID().slice(0, 8)}`], { FANOUT_DB: fanout.dbPath });
  expect(made.code).toBe(0);
  return made.stdout.match(/owner key:\s+(\S+)/)![1]!;
}

const rateHeaders = (r: Reply) => ["limit", "remaining", "reset"].map((h) => r.headers.get(`x-ratelimit-${h}`));

for (const proto of PROTOS) {
  describe(`rate limit over ${proto}`, () => {
    // Success and error responses alike: a 404 of an unknown id and of an unknown path, and a 400.
    const requests: [string, string, unknown?][] = [
      ["GET", "/v1/queues"],
      ["GET", "/v1/queues/q_unknown"],
      ["GET", "/v1/nowhere"],
      ["POST", "/v1/queues", { name: 42 }],
      ["GET", "/v1/events"],
    ];

    /** Spends a key's budget; a run that crosses a minute boundary starts a new window, so it is tried again. */
    async function exhaust(): Promise<{ replies: Reply[]; key: string; before: number }> {
      for (let tries = 0; tries < 3; tries++) {
        const key = await freshKey(limited);
        const before = Date.now();
        const replies: Reply[] = [];
        for (const [method, path, body] of [...requests, ["GET", "/v1/queues"] as [string, string]]) {
          replies.push(await limited.call(proto, method, path, { key, body }));
        }
        if (new Set(replies.map((r) => r.headers.get("x-ratelimit-reset"))).size === 1) return { replies, key, before };
      }
      throw new Error("every attempt straddled a minute boundary");
    }

    test("every response to a keyed request carries the headers; past the limit it is 429 with Retry-After", async () => {
      const { replies, key, before } = await exhaust();
      expect(replies.map((r) => r.status)).toEqual([200, 404, 404, 400, 200, 429]);
      const reset = Number(replies[0]!.headers.get("x-ratelimit-reset"));
      expect(reset).toBeGreaterThan(before / 1000);
      expect(reset).toBeLessThanOrEqual(Math.ceil(before / 1000) + 60);
      expect(reset % 60).toBe(0);
      expect(replies.map(rateHeaders)).toEqual([4, 3, 2, 1, 0, 0].map((left) => [String(LIMIT), String(left), String(reset)]));

      const refused = replies.at(-1)!;
      expect(refused.body).toMatchObject({ title: "Too Many Requests", status: 429 });
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Still refused, and a 429 is no failed authentication: the key stays valid.
      expect((await limited.call(proto, "GET", "/v1/queues", { key })).status).toBe(429);
    });

    test("the limit is per key, and requests without a valid key carry no headers", async () => {
      await exhaust();
      const other = await limited.call(proto, "GET", "/v1/queues", { key: await freshKey(limited) });
      expect(other.status).toBe(200);
      expect(other.headers.get("x-ratelimit-remaining")).toBe(String(LIMIT - 1));
      for (const key of [null, "not-a-key-123"]) {
        const r = await limited.call(proto, "GET", "/v1/queues", { key });
        expect(r.status).toBe(401);
        expect(rateHeaders(r)).toEqual([null, null, null]);
      }
    });

    test("--rate-limit 0 turns limiting and its headers off", async () => {
      for (let i = 0; i < 10; i++) {
        const r = await unlimited.call(proto, "GET", i % 2 ? "/v1/queues" : "/v1/nowhere");
        expect(r.status).toBe(i % 2 ? 200 : 404);
        expect(rateHeaders(r)).toEqual([null, null, null]);
      }
    });
  });
}

for (const [index, proto] of PROTOS.entries()) {
  describe(`lockout over ${proto}`, () => {
    const from = (address: string) => ({ "x-forwarded-for": address });
    const call = (path: string, address: string, key?: string | null) => guarded.call(proto, "GET", path, { key, headers: from(address) });

    test("3 failed authentications lock the address out, valid key or not, until the lock (2s) ends", async () => {
      const address = `10.0.${index}.1`;
      for (let i = 0; i < 3; i++) expect((await call("/v1/queues", address, "wrong-key-123")).status).toBe(401);

      const locked = await call("/v1/queues", address);
      expect(locked.status).toBe(403);
      expect(locked.body).toMatchObject({ title: "Forbidden", status: 403 });
      expect(["1", "2"]).toContain(locked.headers.get("retry-after") ?? "none");
      expect((await call("/v1/queues", address, null)).status).toBe(403);
      expect((await call("/v1/nowhere", address)).status).toBe(403);
      expect((await guarded.call(proto, "POST", "/v1/queues", { body: { name: "x" }, headers: from(address) })).status).toBe(403);

      // Another address, and the proxy's own address, are unaffected.
      expect((await call("/v1/queues", `10.0.${index}.2`)).status).toBe(200);
      expect((await guarded.call(proto, "GET", "/v1/queues")).status).toBe(200);

      // The lock ends, and until then every refusal says it ends within its 2 s, never later.
      const waits = new Set<string | null>();
      await waitFor(async () => {
        const r = await call("/v1/queues", address);
        if (r.status === 403) waits.add(r.headers.get("retry-after"));
        else expect(r.status).toBe(200);
        return r.status === 200;
      }, 10_000, () => "the lock did not end");
      for (const wait of waits) expect(["1", "2"]).toContain(wait ?? "none");
      // Counting starts afresh: one more failure is a 401, not a lock.
      expect((await call("/v1/queues", address, "wrong-key-123")).status).toBe(401);
      expect((await call("/v1/queues", address)).status).toBe(200);
    });

    test("fewer failures than the threshold lock nothing; the left-most X-Forwarded-For entry counts", async () => {
      const address = `10.1.${index}.1`;
      for (let i = 0; i < 2; i++) expect((await call("/v1/queues", `${address}, 127.0.0.1`, null)).status).toBe(401);
      expect((await call("/v1/queues", address)).status).toBe(200);
      expect((await call("/v1/queues", `${address}, 10.9.9.9`, "wrong-key-123")).status).toBe(401);
      expect((await call("/v1/queues", address)).status).toBe(403);
      expect((await call("/v1/queues", "10.9.9.9")).status).toBe(200);
    });
  });
}

/** A GET from a chosen loopback source address: two addresses on one machine, no proxy header involved. */
function getFrom(fanout: Fanout, localAddress: string, key: string, path = "/v1/queues"): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${fanout.url}${path}`, { headers: { "x-api-key": key }, localAddress, rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("lockout by socket address", () => {
  test("without --trust-proxy the peer address counts: one locked address leaves another alone", async () => {
    const fanout = await startFanout({ env: { FANOUT_LOCKOUT: "2/1m:30s" } });
    try {
      expect(await getFrom(fanout, "127.0.0.2", "not-a-key")).toBe(401);
      expect(await getFrom(fanout, "127.0.0.2", "not-a-key")).toBe(401);
      expect(await getFrom(fanout, "127.0.0.2", fanout.key)).toBe(403);
      // A path without /v1 is rewritten before routing; the lock still finds the socket it came from.
      expect(await getFrom(fanout, "127.0.0.2", fanout.key, "/queues")).toBe(403);
      expect(await getFrom(fanout, "127.0.0.1", fanout.key)).toBe(200);
      expect(await getFrom(fanout, "127.0.0.1", fanout.key, "/queues")).toBe(200);
      // A forged X-Forwarded-For does not move a locked client elsewhere when the proxy is not trusted.
      const forged = await fanout.call("h2", "GET", "/v1/queues", { headers: { "x-forwarded-for": "127.0.0.2" } });
      expect(forged.status).toBe(200);
    } finally {
      await fanout.stop();
    }
  });
});
