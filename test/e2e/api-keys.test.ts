/** API keys end to end (docs/api.md, Keys and scopes) against the real server over HTTP/1.1 and HTTP/2. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout;
let ownerId: string;
// This file sends many deliberately bad keys; a lockout would turn later checks into 403s.
beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000/1m:1s" } });
  const keys = await fanout.call("h1", "GET", "/v1/api_keys?per_page=100");
  ownerId = keys.body.api_keys.find((k: { name: string }) => k.name === "owner").id;
});
afterAll(async () => void (await fanout.stop()));

const DEFAULT_SCOPES = ["queues", "listeners", "messages", "schemas", "events", "stats"].flatMap((resource) => [
  { resource, access: "read", targets: ["*"] },
  { resource, access: "write", targets: ["*"] },
]);
const unique = () => `k-${crypto.randomUUID().slice(0, 8)}`;
const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

for (const proto of PROTOS) {
  describe(`api keys over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
    const create = async (body: unknown) => {
      const r = await call("POST", "/v1/api_keys", { body });
      expect(r.status).toBe(200);
      return r.body as { api_key: string; id: string; name: string; status: string; scopes: unknown[] };
    };

    test("a key made without fields is enabled, named and very permissive, and shows its secret once", async () => {
      const r = await call("POST", "/v1/api_keys", { body: {} });
      expect(r.status).toBe(200);
      expect(r.body.api_key).toMatch(/^fo_[0-9A-Za-z]{43}$/);
      expect(r.body).toMatchObject({ name: expect.stringMatching(/^key-/), status: "enabled", scopes: DEFAULT_SCOPES });
      expect(r.body._links.self.href).toBe(`${fanout.url}/v1/api_keys/${r.body.id}`);
      const secret = r.body.api_key;
      expect((await call("GET", "/v1/queues", { key: secret })).status).toBe(200);

      const got = await call("GET", `/v1/api_keys/${r.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.api_key).toEqual({ id: r.body.id, name: r.body.name, status: "enabled", scopes: DEFAULT_SCOPES });
      const list = await call("GET", "/v1/api_keys?per_page=100");
      for (const reply of [got, list]) {
        expect(reply.text).not.toContain(secret);
        expect(reply.text).not.toContain(sha256(secret));
      }
    });

    test("a POST without a body makes a default key too", async () => {
      const r = await call("POST", "/v1/api_keys");
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: "enabled", scopes: DEFAULT_SCOPES });
    });

    test("name, status and scopes are taken as given; a lone '*' means ['*']", async () => {
      const name = unique();
      const scopes = [
        { resource: "queues", access: "read", targets: "*" },
        { resource: "messages", access: "write", targets: ["q_one", "q_two", "q_one"] },
        { resource: "events", access: "read", targets: ["q_x", "*"] },
      ];
      const key = await create({ name, status: "disabled", scopes });
      expect(key).toMatchObject({ name, status: "disabled" });
      expect(key.scopes).toEqual([
        { resource: "queues", access: "read", targets: ["*"] },
        { resource: "messages", access: "write", targets: ["q_one", "q_two"] },
        { resource: "events", access: "read", targets: ["*"] },
      ]);
      expect((await call("GET", "/v1/queues", { key: key.api_key })).status).toBe(401);
    });

    test("lists every key without secrets, paged, with one link per key keyed by name", async () => {
      const names = [unique(), unique(), unique()];
      const made = [];
      for (const name of names) made.push(await create({ name }));
      const all = await call("GET", "/v1/api_keys?per_page=100");
      expect(all.status).toBe(200);
      for (const k of made) {
        expect(all.body.api_keys).toContainEqual({ id: k.id, name: k.name, status: "enabled", scopes: DEFAULT_SCOPES });
        expect(all.body._links[k.name].href).toBe(`${fanout.url}/v1/api_keys/${k.id}`);
        expect(all.text).not.toContain(k.api_key);
      }
      expect(all.body._links.self.href).toBe(`${fanout.url}/v1/api_keys`);
      expect(all.body.api_keys.every((k: object) => Object.keys(k).sort().join() === "id,name,scopes,status")).toBe(true);

      const total = Number(all.headers.get("x-total-count"));
      expect(total).toBe(all.body.api_keys.length);
      const first = await call("GET", "/v1/api_keys?per_page=2&page=1");
      expect(first.body.api_keys).toHaveLength(2);
      expect(first.headers.get("link")).toContain('rel="next"');
      const last = await call("GET", `/v1/api_keys?per_page=2&page=${Math.ceil(total / 2)}`);
      expect(last.headers.get("link")).not.toContain('rel="next"');
      expect((await call("GET", "/v1/api_keys?per_page=0")).status).toBe(400);
    });

    test("disabling takes effect on the next request, and enabling again restores it", async () => {
      const key = await create({ name: unique() });
      expect((await call("GET", "/v1/queues", { key: key.api_key })).status).toBe(200);
      const off = await call("PUT", `/v1/api_keys/${key.id}`, { body: { status: "disabled" } });
      expect(off.status).toBe(200);
      expect(off.body).toEqual({
        api_key: { id: key.id, name: key.name, status: "disabled", scopes: DEFAULT_SCOPES },
        _links: { self: { href: `${fanout.url}/v1/api_keys/${key.id}` } },
      });
      const refused = await call("GET", "/v1/queues", { key: key.api_key });
      expect(refused.body).toEqual({ title: "Unauthorized", status: 401, detail: expect.any(String) });
      expect((await call("PUT", `/v1/api_keys/${key.id}`, { body: { status: "enabled" } })).status).toBe(200);
      expect((await call("GET", "/v1/queues", { key: key.api_key })).status).toBe(200);
    });

    test("PUT renames, and replaces the scopes array as a whole", async () => {
      const key = await create({ name: unique(), scopes: [{ resource: "queues", access: "write", targets: ["*"] }] });
      const name = unique();
      const renamed = await call("PUT", `/v1/api_keys/${key.id}`, { body: { name } });
      expect(renamed.body.api_key).toMatchObject({ name, status: "enabled", scopes: key.scopes });

      const scopes = [{ resource: "events", access: "read", targets: ["*"] }];
      const rescoped = await call("PUT", `/v1/api_keys/${key.id}`, { body: { scopes } });
      expect(rescoped.body.api_key).toEqual({ id: key.id, name, status: "enabled", scopes });
      expect((await call("GET", "/v1/queues", { key: key.api_key })).status).toBe(403);

      // A PUT without a body (Content-Length 0, with or without a JSON content type) changes nothing.
      for (const opts of [{ headers: { "content-length": "0" } }, { raw: "" }]) {
        const untouched = await call("PUT", `/v1/api_keys/${key.id}`, opts);
        expect(untouched.status).toBe(200);
        expect(untouched.body.api_key).toEqual({ id: key.id, name, status: "enabled", scopes });
      }
    });

    test("DELETE removes the key: it is 404 to manage and 401 to use", async () => {
      const key = await create({ name: unique() });
      const gone = await call("DELETE", `/v1/api_keys/${key.id}`);
      expect(gone.status).toBe(200);
      expect(gone.text).toBe("");
      expect((await call("GET", `/v1/api_keys/${key.id}`)).status).toBe(404);
      expect((await call("DELETE", `/v1/api_keys/${key.id}`)).status).toBe(404);
      expect((await call("GET", "/v1/queues", { key: key.api_key })).status).toBe(401);
    });

    test("unknown ids are 404 for every method", async () => {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const r = await call(method, "/v1/api_keys/key_doesnotexist", method === "PUT" ? { body: { name: "x" } } : {});
        expect(r.body).toEqual({ title: "Not Found", status: 404, detail: expect.any(String) });
      }
    });

    test("bad shapes are 400 and change nothing", async () => {
      const before = Number((await call("GET", "/v1/api_keys")).headers.get("x-total-count"));
      const bodies = [
        { status: "paused" },
        { name: "" },
        { name: 7 },
        { scopes: [{ resource: "widgets", access: "read", targets: ["*"] }] },
        { scopes: [{ resource: "queues", access: "admin", targets: ["*"] }] },
        { scopes: [{ resource: "queues", access: "read", targets: "q_1" }] },
        { scopes: [{ resource: "queues", access: "read", targets: [] }] },
        { scopes: [{ resource: "queues", access: "read" }] },
        { scopes: "all" },
      ];
      for (const body of bodies) {
        const r = await call("POST", "/v1/api_keys", { body });
        expect({ body, status: r.status, title: r.body.title }).toEqual({ body, status: 400, title: "Bad Request" });
      }
      expect((await call("POST", "/v1/api_keys", { raw: "{nope" })).status).toBe(400);
      const key = await create({ name: unique() });
      expect((await call("PUT", `/v1/api_keys/${key.id}`, { body: { status: "off" } })).status).toBe(400);
      expect(Number((await call("GET", "/v1/api_keys")).headers.get("x-total-count"))).toBe(before + 1);
    });

    test("protected scopes cannot be granted, on create or on update (422)", async () => {
      const key = await create({ name: unique() });
      for (const resource of ["api_clients", "api_keys", "subscriptions"]) {
        const scopes = [{ resource: "queues", access: "read", targets: ["*"] }, { resource, access: "read", targets: ["*"] }];
        const made = await call("POST", "/v1/api_keys", { body: { scopes } });
        expect(made.body).toMatchObject({ title: "Unprocessable Entity", status: 422, errors: [{ path: "/scopes/1/resource" }] });
        expect((await call("PUT", `/v1/api_keys/${key.id}`, { body: { scopes } })).status).toBe(422);
      }
      expect((await call("GET", `/v1/api_keys/${key.id}`)).body.api_key.scopes).toEqual(DEFAULT_SCOPES);
    });

    test("the owner key cannot be disabled, deleted or re-scoped (423), but may be renamed", async () => {
      const locked = [
        await call("PUT", `/v1/api_keys/${ownerId}`, { body: { status: "disabled" } }),
        await call("PUT", `/v1/api_keys/${ownerId}`, { body: { scopes: [{ resource: "queues", access: "read", targets: ["*"] }] } }),
        await call("DELETE", `/v1/api_keys/${ownerId}`),
      ];
      for (const r of locked) expect(r.body).toEqual({ title: "Locked", status: 423, detail: expect.any(String) });

      const renamed = await call("PUT", `/v1/api_keys/${ownerId}`, { body: { name: "boss", status: "enabled" } });
      expect(renamed.body.api_key).toMatchObject({ id: ownerId, name: "boss", status: "enabled" });
      expect(renamed.body.api_key.scopes.map((s: { resource: string }) => s.resource)).toContain("api_keys");
      expect((await call("PUT", `/v1/api_keys/${ownerId}`, { body: { name: "owner" } })).status).toBe(200);
      expect((await call("GET", "/v1/api_keys")).status).toBe(200);
    });

    test("only the owner key manages keys: any other key is 403", async () => {
      // Unknown fields are refused, so nobody can ask to be an owner key.
      const asOwner = await call("POST", "/v1/api_keys", { body: { name: unique(), owner: true } });
      expect(asOwner.status).toBe(400);
      expect(asOwner.body.errors[0].path).toContain("owner");
      const key = await create({ name: unique() });
      const other = await create({ name: unique() });
      const asKey = { key: key.api_key };
      expect((await call("GET", "/v1/api_keys", asKey)).status).toBe(403);
      expect((await call("POST", "/v1/api_keys", { ...asKey, body: {} })).status).toBe(403);
      expect((await call("GET", `/v1/api_keys/${key.id}`, asKey)).status).toBe(403);
      expect((await call("PUT", `/v1/api_keys/${other.id}`, { ...asKey, body: { status: "disabled" } })).status).toBe(403);
      const denied = await call("DELETE", `/v1/api_keys/${other.id}`, asKey);
      expect(denied.body).toEqual({ title: "Forbidden", status: 403, detail: expect.any(String) });
      expect((await call("GET", `/v1/api_keys/${other.id}`)).body.api_key.status).toBe("enabled");
    });

    test("a missing or unknown key is 401, whatever the body", async () => {
      for (const key of [null, "fo_notarealkey0000000000000000000000000000000"]) {
        expect((await call("GET", "/v1/api_keys", { key })).status).toBe(401);
        expect((await call("POST", "/v1/api_keys", { key, body: { status: "bogus" } })).status).toBe(401);
        expect((await call("DELETE", `/v1/api_keys/${ownerId}`, { key })).status).toBe(401);
      }
    });
  });
}
