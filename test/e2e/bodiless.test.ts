/**
 * No answer claims a body it does not have: every route of the app (its own route list) by every method, over
 * HTTP/1.1 (raw bytes, so the headers are the ones on the wire) and HTTP/2, and no answer with an empty body
 * carries `Content-Type: application/json`. A client that parses by content type (`r.json()`, a validating proxy)
 * fails on one that does. DELETE answers 200 with no body and no content type, its replay under an
 * Idempotency-Key too. A HEAD answer has no body by definition and carries the headers its GET would (RFC 9110
 * §9.3.2): where it says JSON, the GET of the same path answers the same status with a JSON body.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout, type Proto } from "./harness.ts";
import { appRoutes, template } from "./fuzz-cases.ts";
import { H1Connection, H2Client, requestBytes, type Outcome } from "./raw.ts";

const METHODS = ["GET", "POST", "PUT", "PATCH", "HEAD", "OPTIONS", "TRACE"];

let fanout: Fanout;
const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: 204 }) });
beforeAll(async () => {
  // Each route is also asked with a bad key: the lockout would turn the rest into 403s.
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "1000000/1m:1s" } });
});
afterAll(async () => {
  await fanout?.stop();
  receiver.stop(true);
});

type World = Record<string, string>;

/** A resource for every path parameter, made anew for each protocol (its DELETEs remove them). */
async function makeWorld(proto: Proto): Promise<World> {
  const call = async (method: string, path: string, body?: unknown) => {
    const reply = await fanout.call(proto, method, path, { body });
    if (reply.status !== 200) throw new Error(`setup ${method} ${path}: ${reply.status} ${reply.text}`);
    return reply.body;
  };
  const notify = `http://127.0.0.1:${receiver.port}/hook`;
  const tag = crypto.randomUUID().slice(0, 8);
  const queue = (await call("POST", "/v1/queues", { name: `walk-${tag}`, schema: { n: { type: "number" } } })).queue;
  const listener = (await call("POST", `/v1/queues/${queue.id}/listeners`, { name: "l", notify_url: notify, liveness_url: notify })).listener.id;
  const message = (await call("POST", `/v1/queues/${queue.id}/messages`, { name: "m", data: { n: 1 } })).message.id;
  const key = (await call("POST", "/v1/api_keys", { name: `walk-${tag}` })).id;
  const org = (await call("GET", "/v1/events?limit=1")).events[0].client.id;
  const session = (await fanout.call(proto, "POST", "/v1/portal_sessions", { body: { queue_id: queue.id } })).body.portal_session.id;
  return { queue_id: queue.id, schema_id: queue.schema_id, listener_id: listener, message_id: message, api_key_id: key, api_client_id: org, portal_session_id: session, notify };
}

type Sent = { method: string; path: string; outcome: Outcome };

function sender(proto: Proto): { send: (method: string, path: string, body?: string, headers?: Record<string, string>) => Promise<Sent>; close: () => void } {
  const h1 = new H1Connection(fanout.url);
  const h2 = new H2Client(fanout.url);
  const send = async (method: string, path: string, body?: string, extra: Record<string, string> = {}): Promise<Sent> => {
    const headers: Record<string, string> = { "x-api-key": fanout.key, ...(body === undefined ? {} : { "content-type": "application/json" }), ...extra };
    let outcome: Outcome | "refused";
    if (proto === "h2") outcome = await h2.send({ ":method": method, ":path": path, ...headers }, body);
    else {
      const framing: [string, string][] = [["host", "localhost"], ["content-length", String(body === undefined ? 0 : Buffer.byteLength(body))]];
      outcome = await h1.send(requestBytes(method, path, [...framing, ...Object.entries(headers)], body), method === "HEAD");
    }
    if (outcome === "refused" || outcome.ending !== "answered") throw new Error(`${proto} ${method} ${path}: no answer (${outcome === "refused" ? outcome : outcome.ending})`);
    return { method, path, outcome };
  };
  return { send, close: () => (h1.close(), h2.close()) };
}

const claimsJson = (o: Outcome) => /^application\/(.+\+)?json\b/i.test(o.headers["content-type"] ?? "");
const describeSent = ({ method, path, outcome: o }: Sent) => `${method} ${path} -> ${o.status} content-type=${o.headers["content-type"]} body=${JSON.stringify(o.text.slice(0, 80))}`;

for (const proto of PROTOS) {
  describe(`over ${proto}`, () => {
    test("no answer with an empty body claims JSON; DELETE answers 200 with neither body nor content type", async () => {
      const world = await makeWorld(proto);
      const fill = (route: string) => route.replace(/:([a-z_]+)/g, (_, name: string) => world[name]!);
      const body = (method: string, route: string) =>
        ["POST", "PUT", "PATCH"].includes(method) ? JSON.stringify(template(method, route)).replace(/\{(\w+)\}/g, (_, n: string) => world[n] ?? "1") : undefined;
      const { send, close } = sender(proto);
      const answers: Sent[] = [];
      try {
        const routes = appRoutes();
        for (const route of [...new Set(routes.map((r) => r.path)), "/metrics", "/v1/nope"]) {
          for (const method of METHODS) {
            const sent = await send(method, fill(route), body(method, route));
            if (method !== "HEAD") answers.push(sent);
            else if (claimsJson(sent.outcome)) {
              const got = await send("GET", fill(route));
              expect([describeSent(sent), got.outcome.status, got.outcome.text !== "" && claimsJson(got.outcome)]).toEqual([describeSent(sent), sent.outcome.status, true]);
            }
          }
          answers.push(await send("GET", fill(route), undefined, { "x-api-key": "not-a-key" }));
        }
        // Deeper resources first, so each DELETE finds what it removes; each once more under its key, a replay.
        const deletes = routes.filter((r) => r.method === "DELETE").sort((a, b) => b.path.length - a.path.length);
        expect(deletes.length).toBeGreaterThanOrEqual(4);
        for (const route of deletes) {
          const headers = { "idempotency-key": crypto.randomUUID() };
          const first = await send("DELETE", fill(route.path), undefined, headers);
          const replay = await send("DELETE", fill(route.path), undefined, headers);
          expect([describeSent(first), replay.outcome.headers["idempotent-replayed"]]).toEqual([describeSent(first), "true"]);
          for (const sent of [first, replay]) {
            const { status, text, headers } = sent.outcome;
            expect({ status, text, type: headers["content-type"] ?? "none" }).toEqual({ status: 200, text: "", type: "none" });
            if (proto === "h1") expect(sent.outcome.headers["content-length"]).toBe("0");
          }
          answers.push(first, replay, await send("DELETE", fill(route.path)));
        }
      } finally {
        close();
      }
      const empty = answers.filter((a) => a.outcome.text === "");
      expect(empty.length).toBeGreaterThanOrEqual(8); // the DELETEs and their replays at least
      expect(empty.filter((a) => claimsJson(a.outcome)).map(describeSent)).toEqual([]);
    });
  });
}
