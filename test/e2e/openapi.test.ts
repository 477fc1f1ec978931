/**
 * GET /v1/openapi.json tells the truth: it passes the rules of `redocly lint` (Redocly's recommended set, run by
 * @redocly/openapi-core, the engine of the CLI) with no error, and real answers of the running server, errors
 * included, match what it says of their operation and status: the body against the schema (closed: a field the
 * document does not name fails), the headers against the documented ones.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { PROTOS, startFanout, type Fanout, type Proto, type Reply } from "./harness.ts";

type Json = Record<string, any>;
let fanout: Fanout;
let doc: Json;
beforeAll(async () => {
  fanout = await startFanout();
  doc = (await fanout.call("h2", "GET", "/v1/openapi.json", { key: null })).body;
});
afterAll(async () => void (await fanout.stop()));

const ENDPOINTS: [string, string][] = [
  ["get", "/healthz"], ["get", "/readyz"],
  ["post", "/v1/api_keys"], ["get", "/v1/api_keys"], ["get", "/v1/api_keys/{api_key_id}"], ["put", "/v1/api_keys/{api_key_id}"], ["delete", "/v1/api_keys/{api_key_id}"],
  ["get", "/v1/api_clients/{api_client_id}"], ["put", "/v1/api_clients/{api_client_id}"],
  ["post", "/v1/queues"], ["get", "/v1/queues"], ["get", "/v1/queues/{queue_id}"], ["put", "/v1/queues/{queue_id}"], ["delete", "/v1/queues/{queue_id}"],
  ["post", "/v1/queues/{queue_id}/listeners"], ["get", "/v1/queues/{queue_id}/listeners"], ["get", "/v1/listeners"],
  ["get", "/v1/queues/{queue_id}/listeners/{listener_id}"], ["put", "/v1/queues/{queue_id}/listeners/{listener_id}"],
  ["delete", "/v1/queues/{queue_id}/listeners/{listener_id}"],
  ["get", "/v1/queues/{queue_id}/listeners/{listener_id}/secret"], ["post", "/v1/queues/{queue_id}/listeners/{listener_id}/secret/rotate"],
  ["post", "/v1/queues/{queue_id}/listeners/{listener_id}/replay"],
  ["post", "/v1/queues/{queue_id}/messages"], ["get", "/v1/queues/{queue_id}/messages"], ["get", "/v1/messages"],
  ["get", "/v1/queues/{queue_id}/messages/{message_id}"], ["put", "/v1/queues/{queue_id}/messages/{message_id}"],
  ["delete", "/v1/queues/{queue_id}/messages/{message_id}"], ["get", "/v1/queues/{queue_id}/messages/{message_id}/attempts"],
  ["post", "/v1/queues/{queue_id}/messages/{message_id}/redeliver"],
  ["get", "/v1/queues/{queue_id}/schemas/{schema_id}"], ["get", "/v1/events"],
];

test("the OpenAPI 3 document lists every endpoint with a summary, without a key", () => {
  expect(doc.openapi).toMatch(/^3\./);
  const missing = ENDPOINTS.filter(([method, path]) => !doc.paths[path]?.[method]?.summary).map((e) => e.join(" "));
  expect(missing).toEqual([]);
  expect(doc.servers).toEqual([{ url: fanout.url }]);
});

test("passes the rules of `redocly lint` with no error (and no warning but the missing licence)", async () => {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "openapi.json", config });
  const described = problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
  expect(described.filter((p) => !p.startsWith("warn info-license"))).toEqual([]);
});

test("says what a client needs: the key, JSON bodies, optional bodies, integers, error statuses", () => {
  const op = (method: string, path: string) => doc.paths[path][method];
  expect(doc.components.securitySchemes.ApiKey).toEqual(expect.objectContaining({ type: "apiKey", in: "header", name: "X-API-KEY" }));
  expect(doc.security).toEqual([{ ApiKey: [] }]);
  expect(op("get", "/healthz").security).toEqual([]);
  for (const [method, path] of ENDPOINTS) {
    const body = op(method, path).requestBody;
    if (body) expect(Object.keys(body.content)).toEqual(["application/json"]);
  }
  const publish = op("post", "/v1/queues/{queue_id}/messages");
  expect(publish.requestBody.required).toBe(false);
  expect(publish.requestBody.content["application/json"].schema.required).toEqual(["data"]);
  expect(op("post", "/v1/queues/{queue_id}/listeners").requestBody.required).toBe(true);
  const types = (method: string, path: string) => Object.fromEntries(op(method, path).parameters.map((p: Json) => [p.name, p.schema.type]));
  expect(types("get", "/v1/queues")).toEqual({ pretty: "string", page: "integer", per_page: "integer" });
  expect(types("get", "/v1/events")).toMatchObject({ limit: "integer", startAfter: "integer" });
  const statuses = (method: string, path: string) => Object.keys(op(method, path).responses).join(" ");
  expect(statuses("get", "/healthz")).toBe("200 406 500 503");
  expect(op("get", "/readyz").security).toEqual([]);
  expect(statuses("get", "/readyz")).toBe("200 406 500 503");
  // Its 503 is its own body, not the shared error, with the Retry-After every 503 carries.
  const notReady = deref(op("get", "/readyz").responses["503"]);
  expect(notReady.content["application/json"].schema).toMatchObject({ required: ["status", "detail"], properties: { status: { const: "unavailable" } } });
  expect(notReady.headers["Retry-After"]).toMatchObject({ required: true, schema: { type: "integer" } });
  expect(statuses("get", "/v1/queues")).toBe("200 400 401 403 406 429 500 503");
  expect(statuses("post", "/v1/queues/{queue_id}/messages")).toBe("200 400 401 403 404 406 409 413 415 422 429 500 503");
  expect(statuses("delete", "/v1/api_keys/{api_key_id}")).toBe("200 400 401 403 404 406 409 422 423 429 500 503");
  // Writes under /v1 take an Idempotency-Key; their successes may be replays.
  for (const [method, path] of ENDPOINTS) {
    const write = method !== "get" && path.startsWith("/v1/");
    const names = (op(method, path).parameters ?? []).filter((p: Json) => p.in === "header").map((p: Json) => p.name);
    expect([method, path, names]).toEqual([method, path, write ? ["Idempotency-Key"] : []]);
    const success = Object.entries(op(method, path).responses as Json).filter(([status]) => Number(status) < 300);
    for (const [, response] of success) expect([method, path, "Idempotent-Replayed" in (response.headers ?? {})]).toEqual([method, path, write]);
    if (write) expect(Object.keys(op(method, path).responses)).toEqual(expect.arrayContaining(["400", "409", "422"]));
  }
  expect(op("delete", "/v1/queues/{queue_id}").responses["200"].content).toBeUndefined();
});

/** The node a local `$ref` points to, with every `$ref` inside it resolved as well. */
function deref(node: unknown): any {
  if (Array.isArray(node)) return node.map(deref);
  if (!node || typeof node !== "object") return node;
  const { $ref } = node as Json;
  if (typeof $ref === "string") return deref($ref.slice(2).split("/").reduce((at: Json, key) => at[key.replaceAll("~1", "/").replaceAll("~0", "~")], doc));
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(v)]));
}

/** Every object that lists its properties refuses others, so a field the document does not name fails. */
function closed(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!schema || typeof schema !== "object") return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]));
  if (out.properties && out.additionalProperties === undefined && !out.patternProperties) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
const problemsOf = (schema: unknown, value: unknown) => (ajv.validate(closed(schema) as object, value) ? [] : ajv.errorsText(ajv.errors).split(", "));
const WATCHED = ["link", "x-total-count", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "allow", "idempotent-replayed"];

/** What is wrong with `reply` as an answer of the operation `method template`, by the document. */
function mismatches(reply: Reply, method: string, template: string): string[] {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) return [`${method} ${template} is not documented`];
  const response = deref(op.responses[String(reply.status)]);
  if (!response) return [`${method} ${template} does not document ${reply.status}`];
  const out: string[] = [];
  const media = response.content?.["application/json"];
  if (!media) {
    if (reply.text !== "") out.push(`the body should be empty: ${reply.text}`);
    if (reply.headers.has("content-type")) out.push(`an empty body claims a content type: ${reply.headers.get("content-type")}`);
  } else out.push(...problemsOf(media.schema, reply.body).map((p) => `body: ${p} in ${reply.text.slice(0, 300)}`));
  const headers: Json = response.headers ?? {};
  for (const [name, header] of Object.entries(headers)) {
    const value = reply.headers.get(name);
    if (value === null) {
      if (header.required) out.push(`header ${name} is missing`);
      continue;
    }
    const typed = header.schema.type === "integer" && /^-?\d+$/.test(value) ? Number(value) : value;
    out.push(...problemsOf(header.schema, typed).map((p) => `header ${name}: ${p} (${value})`));
  }
  const documented = Object.keys(headers).map((name) => name.toLowerCase());
  for (const name of WATCHED) if (reply.headers.has(name) && !documented.includes(name)) out.push(`header ${name} is not documented`);
  return out;
}

for (const proto of PROTOS) {
  describe(`answers over ${proto} match the document`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto as Proto, method, path, opts);
    const expectDocumented = (reply: Reply, status: number, method: string, template: string) => {
      expect(reply.status).toBe(status);
      expect(mismatches(reply, method, template)).toEqual([]);
      return reply;
    };
    const name = () => `${proto}-${crypto.randomUUID().slice(0, 8)}`;

    test("successes: a paged list with its headers, an empty DELETE, a publish with and without a body", async () => {
      expectDocumented(await call("GET", "/healthz", { key: null }), 200, "GET", "/healthz");
      expectDocumented(await call("GET", "/readyz", { key: null }), 200, "GET", "/readyz");
      const made = expectDocumented(await call("POST", "/v1/queues", { body: { name: name(), schema: { n: { type: "number" } } } }), 200, "POST", "/v1/queues");
      expectDocumented(await call("POST", "/v1/queues", { body: { name: name() } }), 200, "POST", "/v1/queues");
      const q = made.body.queue.id;
      const list = expectDocumented(await call("GET", "/v1/queues?per_page=1"), 200, "GET", "/v1/queues");
      expect(list.headers.get("link")).toContain('rel="next"');
      expect(Number(list.headers.get("x-total-count"))).toBeGreaterThanOrEqual(2);
      expect(list.headers.get("x-ratelimit-limit")).not.toBeNull();
      expectDocumented(await call("GET", `/v1/queues/${q}`), 200, "GET", "/v1/queues/{queue_id}");
      const listener = { name: name(), notify_url: "http://127.0.0.1:9/n", liveness_url: "http://127.0.0.1:9/l" };
      const l = expectDocumented(await call("POST", `/v1/queues/${q}/listeners`, { body: listener }), 200, "POST", "/v1/queues/{queue_id}/listeners");
      expectDocumented(await call("GET", `/v1/queues/${q}/listeners/${l.body.listener.id}`), 200, "GET", "/v1/queues/{queue_id}/listeners/{listener_id}");
      const published = expectDocumented(await call("POST", `/v1/queues/${q}/messages`, { body: { data: { n: 1 } } }), 200, "POST", "/v1/queues/{queue_id}/messages");
      const m = published.body.message.id;
      expectDocumented(await call("GET", `/v1/queues/${q}/messages/${m}`), 200, "GET", "/v1/queues/{queue_id}/messages/{message_id}");
      expectDocumented(await call("GET", `/v1/queues/${q}/messages/${m}/attempts`), 200, "GET", "/v1/queues/{queue_id}/messages/{message_id}/attempts");
      expectDocumented(await call("POST", `/v1/queues/${q}/messages/${m}/redeliver`), 202, "POST", "/v1/queues/{queue_id}/messages/{message_id}/redeliver");
      expectDocumented(await call("POST", `/v1/queues/${q}/messages/${m}/redeliver`, { body: { listeners: [] } }), 422, "POST",
        "/v1/queues/{queue_id}/messages/{message_id}/redeliver");
      expectDocumented(await call("POST", `/v1/queues/${q}/listeners/${l.body.listener.id}/replay`, { body: { since: 0 } }), 202, "POST",
        "/v1/queues/{queue_id}/listeners/{listener_id}/replay");
      expectDocumented(await call("DELETE", `/v1/queues/${q}/messages/${m}`), 200, "DELETE", "/v1/queues/{queue_id}/messages/{message_id}");
      const plain = expectDocumented(await call("POST", "/v1/queues", { body: { name: name() } }), 200, "POST", "/v1/queues").body.queue.id;
      expectDocumented(await call("POST", `/v1/queues/${plain}/messages`), 200, "POST", "/v1/queues/{queue_id}/messages");
      expectDocumented(await call("GET", "/v1/events?limit=5"), 200, "GET", "/v1/events");
    });

    test("idempotency keys: the replay with its header, a bad key (400), a key reused for another request (422)", async () => {
      const q = (await call("POST", "/v1/queues", { body: { name: name() } })).body.queue.id;
      const template = "/v1/queues/{queue_id}/messages";
      const headers = { "idempotency-key": name() };
      expectDocumented(await call("POST", `/v1/queues/${q}/messages`, { body: { data: 1 }, headers }), 200, "POST", template);
      const replay = expectDocumented(await call("POST", `/v1/queues/${q}/messages`, { body: { data: 1 }, headers }), 200, "POST", template);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expectDocumented(await call("POST", `/v1/queues/${q}/messages`, { body: { data: 2 }, headers }), 422, "POST", template);
      expectDocumented(await call("POST", `/v1/queues/${q}/messages`, { body: { data: 1 }, headers: { "idempotency-key": "x".repeat(256) } }), 400, "POST", template);
    });

    test("errors: 400 (body and query), 401, 404, 405, 406, 409, 415, 422, 423", async () => {
      const taken = name();
      const q = (await call("POST", "/v1/queues", { body: { name: taken } })).body.queue.id;
      const badBody = expectDocumented(await call("POST", "/v1/queues", { body: { nmae: "x" } }), 400, "POST", "/v1/queues");
      expect(badBody.body.errors).toEqual([{ path: "/nmae", message: "is not a known field" }]);
      const badQuery = expectDocumented(await call("GET", "/v1/queues?per_page=0"), 400, "GET", "/v1/queues");
      expect(badQuery.body.errors).toEqual([{ path: "per_page", message: "must be an integer from 1 to 100" }]);
      expectDocumented(await call("GET", "/v1/queues", { key: "not-a-key" }), 401, "GET", "/v1/queues");
      expectDocumented(await call("GET", "/v1/queues/q_nope"), 404, "GET", "/v1/queues/{queue_id}");
      expectDocumented(await call("GET", "/v1/queues", { headers: { accept: "text/html" } }), 406, "GET", "/v1/queues");
      expectDocumented(await call("POST", "/v1/queues", { body: { name: taken } }), 409, "POST", "/v1/queues");
      expectDocumented(await call("POST", "/v1/queues", { raw: "{}", headers: { "content-type": "text/plain" } }), 415, "POST", "/v1/queues");
      const refused = { name: name(), notify_url: "http://127.0.0.2:9/n", liveness_url: "http://127.0.0.1:9/l" };
      const unprocessable = expectDocumented(await call("POST", `/v1/queues/${q}/listeners`, { body: refused }), 422, "POST", "/v1/queues/{queue_id}/listeners");
      expect(unprocessable.body.errors[0].path).toBe("/notify_url");
      const created = (await call("POST", "/v1/api_keys", { body: { name: name() } })).body.id;
      const keys = (await call("GET", "/v1/api_keys?per_page=100")).body.api_keys as { id: string }[];
      const owner = keys.find((k) => k.id !== created)!.id;
      expectDocumented(await call("DELETE", `/v1/api_keys/${owner}`), 423, "DELETE", "/v1/api_keys/{api_key_id}");
      expectDocumented(await call("DELETE", `/v1/api_keys/${created}`), 200, "DELETE", "/v1/api_keys/{api_key_id}");
      // 405 belongs to no operation: its body is the shared error, and Allow names the path's methods.
      const wrongMethod = await call("PATCH", "/v1/queues");
      expect(wrongMethod.status).toBe(405);
      expect(problemsOf(deref(doc.components.schemas.Error), wrongMethod.body)).toEqual([]);
      expect(wrongMethod.headers.get("allow")).toBe("POST, GET");
    });
  });
}
