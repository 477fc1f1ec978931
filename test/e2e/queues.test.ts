import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

const unique = () => `q-${crypto.randomUUID().slice(0, 8)}`;

for (const proto of PROTOS) {
  describe(`queues over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);

    test("create, get, list, update and delete a queue with a schema", async () => {
      const name = unique();
      const schema = { id: { type: "number", min: 1 }, email: { type: "string", pattern: "@" } };
      const created = await call("POST", "/v1/queues", { body: { name, schema } });
      expect(created.status).toBe(200);
      const q = created.body.queue;
      expect(q).toMatchObject({ name, schema });
      expect(q.schema_id).toMatch(/^[0-9a-f]{64}$/);
      expect(created.body._links.self.href).toBe(`${fanout.url}/v1/queues/${q.id}`);
      expect(created.body._links.schema.href).toBe(`${fanout.url}/v1/queues/${q.id}/schemas/${q.schema_id}`);

      const got = await call("GET", `/queues/${q.id}`);
      expect(got.status).toBe(200);
      expect(got.body.queue).toEqual(q);

      const list = await call("GET", "/v1/queues?per_page=100");
      expect(list.body.queues).toContainEqual({ id: q.id, name });
      expect(list.body._links[name].href).toBe(`${fanout.url}/v1/queues/${q.id}`);
      expect(Number(list.headers.get("x-total-count"))).toBeGreaterThanOrEqual(1);

      const renamed = await call("PUT", `/v1/queues/${q.id}`, { body: { name: `${name}-2` } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.queue).toMatchObject({ id: q.id, name: `${name}-2`, schema: null, schema_id: null });
      expect(renamed.body._links.schema).toBeUndefined();

      expect((await call("DELETE", `/v1/queues/${q.id}`)).status).toBe(200);
      expect((await call("GET", `/v1/queues/${q.id}`)).status).toBe(404);
    });

    test("refuses duplicates, bad schemas and bad shapes without changing anything", async () => {
      const name = unique();
      expect((await call("POST", "/v1/queues", { body: { name } })).status).toBe(200);
      const dup = await call("POST", "/v1/queues", { body: { name } });
      expect(dup.status).toBe(409);
      expect(dup.body).toMatchObject({ title: "Conflict", status: 409 });

      const bad = await call("POST", "/v1/queues", { body: { name: unique(), schema: { a: { type: "string", min: 5, max: 2 }, b: { type: "object" } } } });
      expect(bad.status).toBe(422);
      expect(bad.body.errors.length).toBeGreaterThanOrEqual(2);

      const typo = await call("POST", "/v1/queues", { body: { nmae: unique() } });
      expect(typo.status).toBe(400);
      expect(typo.body.errors[0].path).toContain("nmae");
      const shape = await call("POST", "/v1/queues", { body: { name: 42 } });
      expect(shape).toMatchObject({ status: 400, body: { title: "Bad Request", status: 400 } });
      expect((await call("POST", "/v1/queues", { raw: "{not json" })).status).toBe(400);
    });

    test("a queue made without a body gets a name", async () => {
      const made = await call("POST", "/v1/queues");
      expect(made.status).toBe(200);
      expect(made.body.queue.name).toMatch(/^queue-[0-9A-Za-z]{8}$/);
    });

    test("pages with Link and X-Total-Count", async () => {
      for (let i = 0; i < 3; i++) await call("POST", "/v1/queues", { body: { name: unique() } });
      const first = await call("GET", "/v1/queues?per_page=2&page=1");
      const total = Number(first.headers.get("x-total-count"));
      expect(total).toBeGreaterThanOrEqual(3);
      expect(first.body.queues).toHaveLength(2);
      expect(first.headers.get("link")).toContain('rel="next"');
      const last = Math.ceil(total / 2);
      const end = await call("GET", `/v1/queues?per_page=2&page=${last}`);
      expect(end.headers.get("link")).not.toContain('rel="next"');
      expect(end.headers.get("link")).toContain('rel="prev"');
      expect((await call("GET", "/v1/queues?per_page=101")).status).toBe(400);
    });

    test("speaks only JSON and renders every error as JSON", async () => {
      expect((await call("GET", "/v1/queues", { key: null })).body).toEqual({ title: "Unauthorized", status: 401, detail: expect.any(String) });
      expect((await call("GET", "/v1/queues", { key: "wrong-key-123" })).status).toBe(401);
      const notAllowed = await call("PATCH", "/v1/queues");
      expect(notAllowed.status).toBe(405);
      expect(notAllowed.headers.get("allow")).toContain("GET");
      expect((await call("GET", "/v1/nowhere")).body).toMatchObject({ title: "Not Found", status: 404 });
      expect((await call("GET", "/v1/queues", { headers: { accept: "text/html" } })).status).toBe(406);
      expect((await call("POST", "/v1/queues", { raw: "a=1", headers: { "content-type": "text/plain" } })).status).toBe(415);
      const pretty = await call("GET", "/v1/queues?pretty=true");
      expect(pretty.text).toContain('\n  "queues"');
    });
  });
}
