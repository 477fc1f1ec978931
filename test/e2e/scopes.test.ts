/**
 * Scope enforcement across the API (docs/api.md): write includes read; targets restrict a key to some
 * queues or items; lists are filtered to what the key may read; anything else is 403; another organization's
 * ids are 404 even to a key whose targets name them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, cli, startFanout, type Fanout } from "./harness.ts";

type ScopeIn = { resource: string; access: "read" | "write"; targets: string[] | "*" };

let fanout: Fanout;
let otherKey: string;
// Listeners need a live target on 127.0.0.1; it acknowledges everything so deliveries stay quiet.
const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
const label = () => crypto.randomUUID().slice(0, 8);

beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000/1m:1s" } });
  const made = await cli(["orgs", "create", `com.example.other-${label()}`], { FANOUT_DB: fanout.dbPath });
  expect(made.code).toBe(0);
  otherKey = made.stdout.match(/owner key:\s+(\S+)/)![1]!;
});
afterAll(async () => {
  await fanout.stop();
  receiver.stop(true);
});

const ids = (items: { id: string }[]) => items.map((i) => i.id).sort();

for (const proto of PROTOS) {
  describe(`scopes over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
    /** A key with exactly these scopes, made by the owner key. */
    const keyWith = async (scopes: ScopeIn[]) => {
      const r = await call("POST", "/v1/api_keys", { body: { name: `k-${label()}`, scopes } });
      expect(r.status).toBe(200);
      return r.body as { api_key: string; id: string };
    };
    const queue = async (body: object = {}, key?: string) => {
      const r = await call("POST", "/v1/queues", { key, body: { name: `q-${label()}`, ...body } });
      expect(r.status).toBe(200);
      return r.body.queue as { id: string; name: string; schema_id: string | null };
    };
    const publish = (queueId: string, key?: string) => call("POST", `/v1/queues/${queueId}/messages`, { key, body: { data: { n: 1 } } });
    const expectForbidden = (r: { status: number; body: any }) => expect(r.body).toEqual({ title: "Forbidden", status: 403, detail: expect.any(String) });

    test("write includes read", async () => {
      const { api_key: key } = await keyWith([{ resource: "queues", access: "write", targets: "*" }]);
      const q = await queue({}, key);
      expect((await call("GET", "/v1/queues", { key })).status).toBe(200);
      expect((await call("GET", `/v1/queues/${q.id}`, { key })).body.queue.id).toBe(q.id);
      expect((await call("PUT", `/v1/queues/${q.id}`, { key, body: { name: `q-${label()}` } })).status).toBe(200);
      expect((await call("DELETE", `/v1/queues/${q.id}`, { key })).status).toBe(200);
    });

    test("a listener's signing secret needs write scope: read-only keys cannot forge deliveries", async () => {
      const q = await queue();
      const url = `http://127.0.0.1:${receiver.port}/hook`;
      const made = await call("POST", `/v1/queues/${q.id}/listeners`, { body: { name: "signed", notify_url: url, liveness_url: url } });
      expect(made.status).toBe(200);
      const path = `/v1/queues/${q.id}/listeners/${made.body.listener.id}`;
      const reader = (await keyWith([{ resource: "listeners", access: "read", targets: [q.id] }])).api_key;
      const writer = (await keyWith([{ resource: "listeners", access: "write", targets: [q.id] }])).api_key;
      expect((await call("GET", path, { key: reader })).status).toBe(200);
      expectForbidden(await call("GET", `${path}/secret`, { key: reader }));
      const secret = await call("GET", `${path}/secret`, { key: writer });
      expect(secret.body.secret).toBe(made.body.secret);
    });

    test("read does not include write", async () => {
      const { api_key: key } = await keyWith([{ resource: "queues", access: "read", targets: ["*"] }]);
      const q = await queue();
      expect((await call("GET", "/v1/queues", { key })).status).toBe(200);
      expect((await call("GET", `/v1/queues/${q.id}`, { key })).status).toBe(200);
      expectForbidden(await call("POST", "/v1/queues", { key, body: { name: `q-${label()}` } }));
      expectForbidden(await call("PUT", `/v1/queues/${q.id}`, { key, body: { name: "renamed" } }));
      expectForbidden(await call("DELETE", `/v1/queues/${q.id}`, { key }));
      expect((await call("GET", `/v1/queues/${q.id}`)).body.queue.name).toBe(q.name);
    });

    test("a key scoped to one queue publishes there only", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const { api_key: key } = await keyWith([{ resource: "messages", access: "write", targets: [q1.id] }]);
      const sent = await publish(q1.id, key);
      expect(sent.status).toBe(200);
      expectForbidden(await publish(q2.id, key));
      const theirs = (await publish(q2.id)).body.message;

      // Write includes read, and lists show only what the key may read.
      const inQueue = await call("GET", `/v1/queues/${q1.id}/messages`, { key });
      expect(ids(inQueue.body.messages)).toEqual([sent.body.message.id]);
      const all = await call("GET", "/v1/messages?per_page=100", { key });
      expect(ids(all.body.messages)).toEqual([sent.body.message.id]);
      expect(all.headers.get("x-total-count")).toBe("1");
      // Another queue's list is not filtered to nothing: it is outside the key's scope.
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/messages`, { key }));
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/messages/${theirs.id}`, { key }));
      expectForbidden(await call("GET", "/v1/queues", { key }));
      expectForbidden(await call("GET", `/v1/queues/${q1.id}`, { key }));
    });

    test("queue targets filter the list and refuse the other queues", async () => {
      const [q1, q2, q3] = [await queue(), await queue(), await queue()];
      const { api_key: reader } = await keyWith([{ resource: "queues", access: "read", targets: [q1.id, q3.id] }]);
      const list = await call("GET", "/v1/queues?per_page=100", { key: reader });
      expect(ids(list.body.queues)).toEqual([q1.id, q3.id].sort());
      expect(list.headers.get("x-total-count")).toBe("2");
      expect(Object.keys(list.body._links).sort()).toEqual(["self", q1.name, q3.name].sort());
      expect((await call("GET", `/v1/queues/${q3.id}`, { key: reader })).status).toBe(200);
      expectForbidden(await call("GET", `/v1/queues/${q2.id}`, { key: reader }));

      const { api_key: writer } = await keyWith([{ resource: "queues", access: "write", targets: [q1.id] }]);
      expect((await call("PUT", `/v1/queues/${q1.id}`, { key: writer, body: { name: `q-${label()}` } })).status).toBe(200);
      expectForbidden(await call("PUT", `/v1/queues/${q2.id}`, { key: writer, body: { name: `q-${label()}` } }));
      expectForbidden(await call("DELETE", `/v1/queues/${q2.id}`, { key: writer }));
      // Making a queue is not an action on any existing one, so only `*` allows it.
      expectForbidden(await call("POST", "/v1/queues", { key: writer, body: { name: `q-${label()}` } }));
    });

    test("listener targets name the queue or the listener itself", async () => {
      const [q1, q2] = [await queue(), await queue()];
      const url = `http://127.0.0.1:${receiver.port}/hook`;
      const make = async (q: string) => (await call("POST", `/v1/queues/${q}/listeners`, { body: { name: `l-${label()}`, notify_url: url, liveness_url: url } })).body.listener;
      const [l1, l2] = [await make(q1.id), await make(q2.id)];

      const { api_key: byQueue } = await keyWith([{ resource: "listeners", access: "read", targets: [q1.id] }]);
      expect(ids((await call("GET", "/v1/listeners?per_page=100", { key: byQueue })).body.listeners)).toEqual([l1.id]);
      expect((await call("GET", `/v1/queues/${q1.id}/listeners/${l1.id}`, { key: byQueue })).status).toBe(200);
      expect(ids((await call("GET", `/v1/queues/${q1.id}/listeners`, { key: byQueue })).body.listeners)).toEqual([l1.id]);
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/listeners`, { key: byQueue }));
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/listeners/${l2.id}`, { key: byQueue }));
      expectForbidden(await call("DELETE", `/v1/queues/${q1.id}/listeners/${l1.id}`, { key: byQueue }));

      const { api_key: byItem } = await keyWith([{ resource: "listeners", access: "write", targets: [l2.id] }]);
      expect(ids((await call("GET", "/v1/listeners?per_page=100", { key: byItem })).body.listeners)).toEqual([l2.id]);
      expect((await call("GET", `/v1/queues/${q2.id}/listeners/${l2.id}`, { key: byItem })).status).toBe(200);
      // A queue's list is the queue's: a key for one of its listeners reads that listener, not the list.
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/listeners`, { key: byItem }));
      expectForbidden(await call("GET", `/v1/queues/${q1.id}/listeners`, { key: byItem }));
      expectForbidden(await call("POST", `/v1/queues/${q2.id}/listeners`, { key: byItem, body: { name: `l-${label()}`, notify_url: url, liveness_url: url } }));
      expect((await call("DELETE", `/v1/queues/${q2.id}/listeners/${l2.id}`, { key: byItem })).status).toBe(200);
    });

    test("schema targets", async () => {
      const schema = { n: { type: "number" } };
      const [q1, q2] = [await queue({ schema }), await queue({ schema })];
      const { api_key: key } = await keyWith([{ resource: "schemas", access: "read", targets: [q1.id] }]);
      const got = await call("GET", `/v1/queues/${q1.id}/schemas/${q1.schema_id}`, { key });
      expect(got.body.schema).toEqual(schema);
      expectForbidden(await call("GET", `/v1/queues/${q2.id}/schemas/${q2.schema_id}`, { key }));
    });

    test("a key without a scope for a resource is 403 there, whatever the id", async () => {
      const q = await queue();
      const { api_key: key } = await keyWith([]);
      for (const path of ["/v1/queues", `/v1/queues/${q.id}`, "/v1/queues/q_unknown", "/v1/messages", "/v1/listeners", `/v1/queues/${q.id}/listeners`, "/v1/api_keys"]) {
        const r = await call("GET", path, { key });
        expect({ path, status: r.status }).toEqual({ path, status: 403 });
      }
      expectForbidden(await publish(q.id, key));
      expectForbidden(await call("POST", "/v1/api_keys", { key, body: {} }));
    });

    test("new scopes apply from the next request", async () => {
      const q = await queue();
      const { api_key: key, id } = await keyWith([{ resource: "queues", access: "read", targets: "*" }]);
      expect((await call("GET", `/v1/queues/${q.id}`, { key })).status).toBe(200);
      expectForbidden(await publish(q.id, key));
      await call("PUT", `/v1/api_keys/${id}`, { body: { scopes: [{ resource: "messages", access: "write", targets: [q.id] }] } });
      expectForbidden(await call("GET", `/v1/queues/${q.id}`, { key }));
      expect((await publish(q.id, key)).status).toBe(200);
    });

    test("another organization's ids are 404, even when a key's targets name them", async () => {
      const theirs = await queue({}, otherKey);
      const mine = await queue();
      expect((await call("GET", `/v1/queues/${theirs.id}`)).status).toBe(404);
      expect((await publish(theirs.id)).status).toBe(404);
      expect((await call("GET", `/v1/queues/${mine.id}`, { key: otherKey })).status).toBe(404);

      const { api_key: key } = await keyWith([
        { resource: "queues", access: "write", targets: [theirs.id] },
        { resource: "messages", access: "write", targets: [theirs.id] },
      ]);
      expect((await call("GET", `/v1/queues/${theirs.id}`, { key })).body).toMatchObject({ title: "Not Found", status: 404 });
      expect((await call("DELETE", `/v1/queues/${theirs.id}`, { key })).status).toBe(404);
      expect((await publish(theirs.id, key)).status).toBe(404);
      const list = await call("GET", "/v1/queues", { key });
      expect(list.body.queues).toEqual([]);
      expect(list.headers.get("x-total-count")).toBe("0");
      expect((await call("GET", `/v1/queues/${theirs.id}`, { key: otherKey })).status).toBe(200);
    });
  });
}
