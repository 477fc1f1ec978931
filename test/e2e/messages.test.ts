import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { PROTOS, startFanout, waitFor, type Fanout, type Proto } from "./harness.ts";

// A small limit keeps the over-limit bodies small; the boundary is exercised exactly.
const MAX_MESSAGE_BYTES = 4096;

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout({ env: { FANOUT_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES) } })));
afterAll(async () => void (await fanout.stop()));

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
const SCHEMA = {
  id: { type: "number", min: 1 },
  email: { type: "string", pattern: "^[^@]+@[^@]+$" },
  tags: { type: "array", items: { type: "string", max: 5 }, required: false },
};
const ids = (items: { id: string }[]) => items.map((i) => i.id);

/**
 * Marks the message's only delivery as missed after a 503 and appends its attempt, straight in the server's
 * database: the views must be checked with known values, whatever the delivery worker is doing at the time
 * (a terminal state is one it leaves alone, and attempts are append-only). The row exists once the worker has
 * fanned the message out, a moment after the publish.
 */
async function seedFailedDelivery(dbPath: string, messageId: string): Promise<void> {
  const db = new Database(dbPath);
  try {
    db.run("PRAGMA busy_timeout = 5000");
    const find = db.query("SELECT d.id AS id FROM deliveries d JOIN messages m ON m.seq = d.message_seq WHERE m.id = ?");
    const row = await waitFor(() => (find.get(messageId) as { id: number } | null) ?? undefined, 5000, () => "the delivery was never written");
    db.run("UPDATE deliveries SET state = 'missed', attempt = 7, next_attempt_at = NULL, last_status = 503, last_error = 'Service Unavailable' WHERE id = ?", [row.id]);
    db.run("INSERT INTO attempts (delivery_id, attempt, attempted_at, status_code, duration_ms, error, response) VALUES (?, 7, 1234, 503, 12, NULL, 'busy')", [row.id]);
  } finally {
    db.close();
  }
}

function client(proto: Proto) {
  const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
  const queue = async (schema?: unknown) => (await call("POST", "/v1/queues", { body: { name: unique("q"), schema } })).body.queue.id as string;
  const publish = (q: string, body?: unknown, key?: string) => call("POST", `/v1/queues/${q}/messages`, { body, key });
  const listener = async (q: string) =>
    (await call("POST", `/v1/queues/${q}/listeners`, { body: { name: unique("l"), notify_url: "http://127.0.0.1:9/n", liveness_url: "http://127.0.0.1:9/l" } })).body.listener;
  const scopedKey = async (scopes: unknown[]) => (await call("POST", "/v1/api_keys", { body: { name: unique("k"), scopes } })).body.api_key as string;
  return { call, queue, publish, listener, scopedKey };
}

for (const proto of PROTOS) {
  describe(`messages over ${proto}`, () => {
    const { call, queue, publish, listener, scopedKey } = client(proto);

    test("a queue's new schema or deletion applies to the very next publish", async () => {
      const q = await queue();
      expect((await publish(q, { data: { anything: true } })).status).toBe(200);
      const put = await call("PUT", `/v1/queues/${q}`, { body: { schema: { n: { type: "number" } } } });
      expect(put.status).toBe(200);
      expect((await publish(q, { data: { anything: true } })).status).toBe(422);
      expect((await publish(q, { data: { n: 1 } })).status).toBe(200);
      expect((await call("PUT", `/v1/queues/${q}`, { body: {} })).status).toBe(200);
      expect((await publish(q, { data: { anything: true } })).status).toBe(200);
      expect((await call("DELETE", `/v1/queues/${q}`)).status).toBe(200);
      expect((await publish(q, { data: 1 })).status).toBe(404);
    });

    test("publish, get, list, rename and delete a message", async () => {
      const q = await queue();
      const early = await listener(q);
      const data = { order: 7, items: [{ sku: "a" }], note: "ü" };
      const created = await publish(q, { name: "order", data });
      expect(created.status).toBe(200);
      const id = created.body.message.id;
      expect(created.body.message).toEqual({ id, name: "order" });
      const self = `${fanout.url}/v1/queues/${q}/messages/${id}`;
      expect(created.body._links.self.href).toBe(self);
      await listener(q); // created after the message, so it gets no delivery of it

      const got = await call("GET", `/v1/queues/${q}/messages/${id}`);
      expect(got.status).toBe(200);
      // No asymmetric matcher inside toMatchObject here: Bun 1.4.5 writes the matcher into the received object.
      expect(got.body.message).toMatchObject({ id, name: "order", data });
      expect(Math.abs(got.body.message.created_at - Date.now())).toBeLessThan(60_000);
      // The delivery worker may already be trying the (closed) port, so only the shape and identity are fixed.
      expect(got.body.message.deliveries).toHaveLength(1);
      const [delivery] = got.body.message.deliveries;
      expect(delivery.listener).toEqual(early);
      expect(Object.keys(delivery).sort()).toEqual(["attempts", "cycle", "last_error", "last_status", "listener", "next_attempt_at", "state"]);
      expect(["pending", "sending", "acknowledged", "missed"]).toContain(delivery.state);
      expect(typeof delivery.attempts).toBe("number");
      expect(got.body._links.attempts.href).toBe(`${self}/attempts`);

      const list = await call("GET", `/queues/${q}/messages`);
      expect(list.body.messages).toEqual([{ id, name: "order" }]);
      expect(list.body._links.order.href).toBe(self);
      expect(ids((await call("GET", "/v1/messages?per_page=100")).body.messages)).toContain(id);

      const renamed = await call("PUT", `/v1/queues/${q}/messages/${id}`, { body: { name: "renamed" } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.message).toEqual({ id, name: "renamed" });
      const kept = await call("PUT", `/v1/queues/${q}/messages/${id}`, { headers: { "content-length": "0" } });
      expect(kept.body.message).toEqual({ id, name: "renamed" });
      expect((await call("PUT", `/v1/queues/${q}/messages/${id}`, { body: { name: null } })).body.message).toEqual({ id, name: null });
      expect((await call("PUT", `/v1/queues/${q}/messages/${id}`, { body: { name: "" } })).status).toBe(400);

      const deleted = await call("DELETE", `/v1/queues/${q}/messages/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.text).toBe("");
      expect((await call("GET", `/v1/queues/${q}/messages/${id}`)).status).toBe(404);
      expect((await call("GET", `/v1/queues/${q}/messages`)).body.messages).toEqual([]);
    });

    test("a POST without a body publishes null data; a body must carry data", async () => {
      const q = await queue();
      const bare = await call("POST", `/v1/queues/${q}/messages`, { headers: { "content-length": "0" } });
      expect(bare.status).toBe(200);
      expect(bare.body.message).toEqual({ id: expect.any(String), name: null });
      expect((await call("GET", `/v1/queues/${q}/messages/${bare.body.message.id}`)).body.message.data).toBeNull();
      const noHeaders = await call("POST", `/v1/queues/${q}/messages`);
      expect(noHeaders.status).toBe(200);

      for (const raw of ["{}", '{"name":"x"}', "null", "5", '{"data":1,"name":42}']) {
        expect((await call("POST", `/v1/queues/${q}/messages`, { raw })).status).toBe(400);
      }
      const broken = await call("POST", `/v1/queues/${q}/messages`, { raw: "{nope" });
      expect(broken.body).toMatchObject({ title: "Bad Request", status: 400 });
      expect((await call("GET", `/v1/queues/${q}/messages`)).body.messages).toHaveLength(2);
    });

    test("data is stored as sent: a string stays a string, any JSON value is accepted", async () => {
      const q = await queue();
      for (const data of ['{"a":1}', "plain text", 0, false, [1, "b"], null]) {
        const id = (await publish(q, { data })).body.message.id;
        expect((await call("GET", `/v1/queues/${q}/messages/${id}`)).body.message.data).toEqual(data);
      }
    });

    test("data over the size limit is 413; at the limit it is accepted", async () => {
      const q = await queue();
      // A string serializes with two quotes.
      expect((await publish(q, { data: "x".repeat(MAX_MESSAGE_BYTES - 2) })).status).toBe(200);
      const over = await publish(q, { data: "x".repeat(MAX_MESSAGE_BYTES - 1) });
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ status: 413, detail: expect.any(String) });
      expect((await publish(q, { data: { text: "é".repeat(MAX_MESSAGE_BYTES / 2) } })).status).toBe(413);
      expect((await call("GET", `/v1/queues/${q}/messages`)).headers.get("x-total-count")).toBe("1");
    });

    test("a queue's schema refuses non-conforming data with 422 listing every path, and stores nothing", async () => {
      const q = await queue(SCHEMA);
      const ok = await publish(q, { data: { id: 1, email: "a@b", tags: ["x"] } });
      expect(ok.status).toBe(200);
      expect((await publish(q, { data: JSON.stringify({ id: 2, email: "c@d" }) })).status).toBe(200);

      const bad = await publish(q, { data: { id: 0, email: "nope", tags: ["toolong", "ok", 3], extra: true } });
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ title: "Unprocessable Entity", status: 422 });
      const paths = bad.body.errors.map((e: { path: string }) => e.path).sort();
      expect(paths).toEqual(["/data/email", "/data/extra", "/data/id", "/data/tags/0", "/data/tags/2"]);
      const inString = await publish(q, { data: JSON.stringify({ email: "a@b" }) });
      expect(inString.status).toBe(422);
      expect(inString.body.errors).toEqual([{ path: "/data/id", message: expect.any(String) }]);

      expect((await publish(q, { data: "not json" })).status).toBe(422);
      expect((await publish(q, { data: null })).status).toBe(422);
      expect((await call("POST", `/v1/queues/${q}/messages`, { headers: { "content-length": "0" } })).status).toBe(422);
      expect((await call("GET", `/v1/queues/${q}/messages`)).headers.get("x-total-count")).toBe("2");
    });

    test("pages with Link and X-Total-Count", async () => {
      const q = await queue();
      for (let i = 0; i < 3; i++) await publish(q, { name: "same", data: i });
      const first = await call("GET", `/v1/queues/${q}/messages?per_page=2`);
      expect(first.body.messages).toHaveLength(2);
      expect(first.headers.get("x-total-count")).toBe("3");
      expect(first.headers.get("link")).toContain('rel="next"');
      // Repeated names fall back to the id as the link key.
      expect(Object.keys(first.body._links).sort()).toEqual(["same", "self", first.body.messages[1].id].sort());
      const second = await call("GET", `/v1/queues/${q}/messages?per_page=2&page=2`);
      expect(second.body.messages).toHaveLength(1);
      expect(second.headers.get("link")).not.toContain('rel="next"');
      expect((await call("GET", "/v1/messages?per_page=0")).status).toBe(400);
    });

    test("attempts and delivery state are reported per listener", async () => {
      const q = await queue();
      const l = await listener(q);
      const id = (await publish(q, { data: 1 })).body.message.id;
      const path = `/v1/queues/${q}/messages/${id}`;
      expect((await call("GET", `${path}/attempts`)).body.attempts).toBeArray();
      await seedFailedDelivery(fanout.dbPath, id);

      const attempts = await call("GET", `${path}/attempts`);
      expect(attempts.status).toBe(200);
      expect(attempts.body.attempts).toContainEqual({ listener: l, attempt: 7, cycle: 1, attempted_at: 1234, status_code: 503, duration_ms: 12, error: null, response: "busy" });
      expect(attempts.body._links.self.href).toBe(`${fanout.url}${path}/attempts`);
      const [delivery] = (await call("GET", path)).body.message.deliveries;
      expect(delivery).toEqual({ listener: l, state: "missed", attempts: 7, next_attempt_at: null, last_status: 503, last_error: "Service Unavailable", cycle: 1 });
      expect((await call("GET", `/v1/queues/${q}/messages/msg_nope/attempts`)).status).toBe(404);
    });

    test("unknown ids are 404; authentication and media types", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const id = (await publish(q1, { data: 1 })).body.message.id;
      expect((await publish("q_nope", { data: 1 })).status).toBe(404);
      expect((await call("GET", "/v1/queues/q_nope/messages")).status).toBe(404);
      for (const method of ["GET", "PUT", "DELETE"]) {
        expect((await call(method, `/v1/queues/${q1}/messages/msg_nope`, { body: method === "PUT" ? { name: "x" } : undefined })).status).toBe(404);
        expect((await call(method, `/v1/queues/${q2}/messages/${id}`, { body: method === "PUT" ? { name: "x" } : undefined })).status).toBe(404);
      }
      expect((await publish(q1, { data: 1 }, "wrong-key-1234")).status).toBe(401);
      expect((await call("GET", "/v1/messages", { key: null })).status).toBe(401);
      expect((await call("POST", `/v1/queues/${q1}/messages`, { raw: "data=1", headers: { "content-type": "text/plain" } })).status).toBe(415);
    });

    test("a messages scope on one queue may publish there, schema checked, and nowhere else", async () => {
      const [q1, q2] = [await queue(SCHEMA), await queue()];
      const publisher = await scopedKey([{ resource: "messages", access: "write", targets: [q1] }]);
      const sent = await publish(q1, { data: { id: 1, email: "a@b" } }, publisher);
      expect(sent.status).toBe(200);
      expect((await publish(q1, { data: { id: 1 } }, publisher)).status).toBe(422);
      expect((await publish(q2, { data: 1 }, publisher)).status).toBe(403);
      expect((await call("GET", `/v1/queues/${q1}`, { key: publisher })).status).toBe(403);
      expect((await call("GET", `/v1/queues/${q1}/messages/${sent.body.message.id}`, { key: publisher })).status).toBe(200);

      const other = (await publish(q2, { data: 2 })).body.message.id;
      const reader = await scopedKey([{ resource: "messages", access: "read", targets: [q1] }]);
      const seen = await call("GET", "/v1/messages?per_page=100", { key: reader });
      expect(ids(seen.body.messages)).toEqual([sent.body.message.id]);
      expect((await call("GET", `/v1/queues/${q2}/messages/${other}`, { key: reader })).status).toBe(403);
      expect((await publish(q1, { data: { id: 1, email: "a@b" } }, reader)).status).toBe(403);
      expect((await call("DELETE", `/v1/queues/${q1}/messages/${sent.body.message.id}`, { key: reader })).status).toBe(403);

      const none = await scopedKey([{ resource: "queues", access: "write", targets: ["*"] }]);
      expect((await call("GET", "/v1/messages", { key: none })).status).toBe(403);
      expect((await publish(q2, { data: 1 }, none)).status).toBe(403);
    });
  });
}
