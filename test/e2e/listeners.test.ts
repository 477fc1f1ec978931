import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout, type Proto } from "./harness.ts";

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
// Nothing listens on port 9 and no test waits for a delivery: these only have to pass the egress check.
const target = (path: string) => `http://127.0.0.1:9/${path}`;
const LIVENESS_STATES = ["pending", "stable", "unstable", "down"];

function client(proto: Proto) {
  const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
  const queue = async () => (await call("POST", "/v1/queues", { body: { name: unique("q") } })).body.queue.id as string;
  const listener = async (q: string, name = unique("l"), key?: string) =>
    call("POST", `/v1/queues/${q}/listeners`, { body: { name, notify_url: target("n"), liveness_url: target("l") }, key });
  const scopedKey = async (scopes: unknown[]) => {
    const made = await call("POST", "/v1/api_keys", { body: { name: unique("k"), scopes } });
    expect(made.status).toBe(200);
    return made.body.api_key as string;
  };
  return { call, queue, listener, scopedKey };
}

for (const proto of PROTOS) {
  describe(`listeners over ${proto}`, () => {
    const { call, queue, listener, scopedKey } = client(proto);

    test("create, get, list, update and delete a listener", async () => {
      const q = await queue();
      const name = unique("l");
      const created = await listener(q, name);
      expect(created.status).toBe(200);
      const id = created.body.listener.id;
      expect(created.body.listener).toEqual({ id, name });
      expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const self = `${fanout.url}/v1/queues/${q}/listeners/${id}`;
      expect(created.body._links.self.href).toBe(self);

      const got = await call("GET", `/v1/queues/${q}/listeners/${id}`);
      expect(got.status).toBe(200);
      expect(got.body.listener).toMatchObject({ id, name, notify_url: target("n"), liveness_url: target("l") });
      expect(got.body.listener.messages).toEqual({ acknowledged_count: 0, missed: [], missed_count: 0 });
      expect(LIVENESS_STATES).toContain(got.body.listener.liveness.state);
      expect(got.body.listener.liveness).toEqual({ state: expect.any(String), success_count: expect.any(Number), failure_count: expect.any(Number) });
      expect(got.body._links.self.href).toBe(self);
      expect(got.body._links.secret.href).toBe(`${self}/secret`);
      expect((await call("GET", `/v1/queues/${q}`)).body._links[name].href).toBe(self);

      const list = await call("GET", `/queues/${q}/listeners`);
      expect(list.status).toBe(200);
      // The first liveness probe (to port 9, refused) may land between the two reads and move the counters.
      expect(list.body.listeners).toEqual([{ ...got.body.listener, liveness: expect.any(Object) }]);
      expect(list.body._links).toEqual({ self: { href: `${fanout.url}/v1/queues/${q}/listeners` }, [name]: { href: self } });
      const all = await call("GET", "/v1/listeners?per_page=100");
      expect(all.body.listeners.map((l: { id: string }) => l.id)).toContain(id);

      const renamed = await call("PUT", `/v1/queues/${q}/listeners/${id}`, { body: { name: `${name}-2`, notify_url: target("n2") } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.listener).toEqual({ id, name: `${name}-2` });
      const after = (await call("GET", `/v1/queues/${q}/listeners/${id}`)).body.listener;
      expect(after).toMatchObject({ name: `${name}-2`, notify_url: target("n2"), liveness_url: target("l") });

      const deleted = await call("DELETE", `/v1/queues/${q}/listeners/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.text).toBe("");
      expect((await call("GET", `/v1/queues/${q}/listeners/${id}`)).status).toBe(404);
      expect((await call("GET", `/v1/queues/${q}/listeners`)).body.listeners).toEqual([]);
    });

    test("refuses malformed bodies with 400", async () => {
      const q = await queue();
      const post = (body: unknown) => call("POST", `/v1/queues/${q}/listeners`, { body });
      expect((await post({ name: "a", notify_url: target("n") })).status).toBe(400);
      expect((await post({ name: "a", notify_url: "not a url", liveness_url: target("l") })).status).toBe(400);
      expect((await post({ name: "a", notify_url: "ftp://127.0.0.1/x", liveness_url: target("l") })).status).toBe(400);
      expect((await post({ name: "", notify_url: target("n"), liveness_url: target("l") })).status).toBe(400);
      expect((await call("POST", `/v1/queues/${q}/listeners`, { raw: "{nope" })).status).toBe(400);
      const id = (await listener(q)).body.listener.id;
      const noBody = await call("PUT", `/v1/queues/${q}/listeners/${id}`, { headers: { "content-length": "0" } });
      expect(noBody.status).toBe(400);
      expect((await call("PUT", `/v1/queues/${q}/listeners/${id}`, { body: { liveness_url: 7 } })).status).toBe(400);
      expect((await call("GET", `/v1/queues/${q}/listeners`)).body.listeners).toHaveLength(1);
    });

    test("refuses reserved names and refused networks with 422, naming the field", async () => {
      const q = await queue();
      for (const name of ["self", "schema"]) {
        const r = await listener(q, name);
        expect(r.status).toBe(422);
        expect(r.body.errors).toContainEqual({ path: "/name", message: expect.any(String) });
      }
      const refused = await call("POST", `/v1/queues/${q}/listeners`, {
        body: { name: "x", notify_url: "http://127.0.0.2:9/n", liveness_url: "https://127.0.0.2/l" },
      });
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({ title: "Unprocessable Entity", status: 422 });
      expect(refused.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(["/liveness_url", "/notify_url"]);
      const id = (await listener(q)).body.listener.id;
      const update = await call("PUT", `/v1/queues/${q}/listeners/${id}`, { body: { notify_url: "http://127.0.0.2/n" } });
      expect(update.status).toBe(422);
      const hint = "127.0.0.2 is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)";
      expect(update.body.errors).toEqual([{ path: "/notify_url", message: hint }]);
      expect((await call("PUT", `/v1/queues/${q}/listeners/${id}`, { body: { name: "self" } })).status).toBe(422);
      expect((await call("GET", `/v1/queues/${q}/listeners/${id}`)).body.listener.notify_url).toBe(target("n"));
    });

    test("duplicate names in a queue are 409; the same name on another queue is fine", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const name = unique("l");
      expect((await listener(q1, name)).status).toBe(200);
      const dup = await listener(q1, name);
      expect(dup.status).toBe(409);
      expect(dup.body).toMatchObject({ title: "Conflict", status: 409 });
      expect((await listener(q2, name)).status).toBe(200);
      const other = (await listener(q1)).body.listener.id;
      expect((await call("PUT", `/v1/queues/${q1}/listeners/${other}`, { body: { name } })).status).toBe(409);
    });

    test("unknown ids are 404 on every route, a listener under another queue too", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const id = (await listener(q1)).body.listener.id;
      expect((await listener("q_nope")).status).toBe(404);
      expect((await call("GET", "/v1/queues/q_nope/listeners")).status).toBe(404);
      for (const [method, suffix] of [["GET", ""], ["PUT", ""], ["DELETE", ""], ["GET", "/secret"], ["POST", "/secret/rotate"]]) {
        const body = method === "PUT" ? { name: "z" } : undefined;
        expect((await call(method, `/v1/queues/${q1}/listeners/lst_nope${suffix}`, { body })).status).toBe(404);
        expect((await call(method, `/v1/queues/${q2}/listeners/${id}${suffix}`, { body })).status).toBe(404);
      }
      expect((await call("GET", `/v1/queues/${q1}/listeners/${id}`)).status).toBe(200);
    });

    test("pages with Link and X-Total-Count", async () => {
      const q = await queue();
      for (let i = 0; i < 3; i++) await listener(q);
      const first = await call("GET", `/v1/queues/${q}/listeners?per_page=2`);
      expect(first.body.listeners).toHaveLength(2);
      expect(first.headers.get("x-total-count")).toBe("3");
      expect(first.headers.get("link")).toContain('rel="next"');
      const second = await call("GET", `/v1/queues/${q}/listeners?per_page=2&page=2`);
      expect(second.body.listeners).toHaveLength(1);
      expect(second.headers.get("link")).toContain('rel="prev"');
      expect(second.headers.get("link")).not.toContain('rel="next"');
      expect((await call("GET", `/v1/listeners?per_page=101`)).status).toBe(400);
      expect((await call("GET", `/v1/listeners?page=0`)).status).toBe(400);
    });

    test("the secret can be read and rotated; the old one stays for 24 hours", async () => {
      const q = await queue();
      const created = (await listener(q)).body;
      const path = `/v1/queues/${q}/listeners/${created.listener.id}/secret`;
      const read = await call("GET", path);
      expect(read.status).toBe(200);
      expect(read.body.secret).toBe(created.secret);
      expect(read.body.previous_secret).toBeUndefined();
      const before = Date.now();
      const rotated = await call("POST", `${path}/rotate`);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(created.secret);
      expect(rotated.body.previous_secret).toBe(created.secret);
      const day = 24 * 60 * 60 * 1000;
      expect(rotated.body.previous_secret_expires_at).toBeGreaterThanOrEqual(before + day - 5_000);
      expect(rotated.body.previous_secret_expires_at).toBeLessThanOrEqual(Date.now() + day + 5_000);
      expect((await call("GET", path)).body).toEqual(rotated.body);
    });

    test("authentication, media types and scopes", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const l1 = (await listener(q1)).body.listener.id;
      const l2 = (await listener(q2)).body.listener.id;
      expect((await call("GET", "/v1/listeners", { key: null })).status).toBe(401);
      expect((await call("POST", `/v1/queues/${q1}/listeners`, { key: "wrong-key-1234" })).status).toBe(401);
      expect((await call("POST", `/v1/queues/${q1}/listeners`, { raw: "name=a", headers: { "content-type": "text/plain" } })).status).toBe(415);

      const reader = await scopedKey([{ resource: "listeners", access: "read", targets: [q1] }]);
      const seen = await call("GET", "/v1/listeners?per_page=100", { key: reader });
      expect(seen.status).toBe(200);
      expect(seen.body.listeners.map((l: { id: string }) => l.id)).toEqual([l1]);
      expect(seen.headers.get("x-total-count")).toBe("1");
      expect((await call("GET", `/v1/queues/${q1}/listeners/${l1}`, { key: reader })).status).toBe(200);
      expect((await call("GET", `/v1/queues/${q2}/listeners/${l2}`, { key: reader })).status).toBe(403);
      expect((await listener(q1, unique("l"), reader)).status).toBe(403);
      expect((await call("DELETE", `/v1/queues/${q1}/listeners/${l1}`, { key: reader })).status).toBe(403);

      const writer = await scopedKey([{ resource: "listeners", access: "write", targets: [q1] }]);
      expect((await listener(q1, unique("l"), writer)).status).toBe(200);
      expect((await listener(q2, unique("l"), writer)).status).toBe(403);
      expect((await call("POST", `/v1/queues/${q1}/listeners/${l1}/secret/rotate`, { key: writer })).status).toBe(200);

      const itemOnly = await scopedKey([{ resource: "listeners", access: "read", targets: [l2] }]);
      expect((await call("GET", `/v1/queues/${q2}/listeners/${l2}`, { key: itemOnly })).status).toBe(200);
      // The queue's list is the queue's: a key for one listener in it reads that listener only (403 here).
      expect((await call("GET", `/v1/queues/${q2}/listeners`, { key: itemOnly })).status).toBe(403);

      const none = await scopedKey([{ resource: "queues", access: "read", targets: ["*"] }]);
      expect((await call("GET", "/v1/listeners", { key: none })).status).toBe(403);
    });
  });
}
