import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
const SCHEMA = { id: { type: "number", min: 1 }, customer: { type: "object", props: { email: { type: "string" } }, strict: false } };
const OTHER = { id: { type: "string", enum: ["a", "b"] } };

for (const proto of PROTOS) {
  describe(`schemas over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
    const queue = async (schema?: unknown) => (await call("POST", "/v1/queues", { body: { name: unique("q"), schema } })).body.queue;
    const scopedKey = async (scopes: unknown[]) => (await call("POST", "/v1/api_keys", { body: { name: unique("k"), scopes } })).body.api_key as string;

    test("the queue's schema link answers with the schema", async () => {
      const q = await queue(SCHEMA);
      const href = `${fanout.url}/v1/queues/${q.id}/schemas/${q.schema_id}`;
      expect(q.schema_id).toMatch(/^[0-9a-f]{64}$/);
      const got = await call("GET", new URL(href).pathname);
      expect(got.status).toBe(200);
      expect(got.body).toEqual({ schema: SCHEMA, _links: { self: { href }, queue: { href: `${fanout.url}/v1/queues/${q.id}` } } });
      expect((await call("GET", `/queues/${q.id}/schemas/${q.schema_id}?pretty=true`)).text).toContain('\n  "schema"');
    });

    test("only the current schema exists: other ids, replaced and removed schemas are 404", async () => {
      const q = await queue(SCHEMA);
      const other = await queue(OTHER);
      const plain = await queue();
      const at = (queueId: string, schemaId: string) => call("GET", `/v1/queues/${queueId}/schemas/${schemaId}`);
      expect((await at(q.id, other.schema_id)).status).toBe(404);
      expect((await at(q.id, "0".repeat(64))).status).toBe(404);
      expect((await at(plain.id, q.schema_id)).status).toBe(404);
      expect((await at("q_nope", q.schema_id)).status).toBe(404);

      const replaced = (await call("PUT", `/v1/queues/${q.id}`, { body: { schema: OTHER } })).body.queue;
      expect(replaced.schema_id).toBe(other.schema_id);
      const gone = await at(q.id, q.schema_id);
      expect(gone.status).toBe(404);
      expect(gone.body).toMatchObject({ title: "Not Found", status: 404 });
      expect((await at(q.id, replaced.schema_id)).body.schema).toEqual(OTHER);

      await call("PUT", `/v1/queues/${q.id}`, { body: { name: q.name } });
      expect((await at(q.id, replaced.schema_id)).status).toBe(404);
    });

    test("needs a key, and a schemas scope on the queue or on the schema", async () => {
      const [q1, q2] = [await queue(SCHEMA), await queue(OTHER)];
      const path = (q: { id: string; schema_id: string }) => `/v1/queues/${q.id}/schemas/${q.schema_id}`;
      expect((await call("GET", path(q1), { key: null })).status).toBe(401);
      expect((await call("GET", path(q1), { key: "wrong-key-1234" })).status).toBe(401);

      const byQueue = await scopedKey([{ resource: "schemas", access: "read", targets: [q1.id] }]);
      expect((await call("GET", path(q1), { key: byQueue })).status).toBe(200);
      expect((await call("GET", path(q2), { key: byQueue })).status).toBe(403);
      const bySchema = await scopedKey([{ resource: "schemas", access: "read", targets: [q2.schema_id] }]);
      expect((await call("GET", path(q2), { key: bySchema })).status).toBe(200);
      expect((await call("GET", path(q1), { key: bySchema })).status).toBe(403);
      const queuesOnly = await scopedKey([{ resource: "queues", access: "read", targets: ["*"] }]);
      const refused = await call("GET", path(q1), { key: queuesOnly });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ title: "Forbidden", status: 403 });
    });

    test("the schema path has only GET", async () => {
      const q = await queue(SCHEMA);
      const put = await call("PUT", `/v1/queues/${q.id}/schemas/${q.schema_id}`, { body: SCHEMA });
      expect(put.status).toBe(405);
      expect(put.headers.get("allow")).toContain("GET");
    });
  });
}
