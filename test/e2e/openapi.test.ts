/** GET /v1/openapi.json is generated from the route models and describes every endpoint. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

const ENDPOINTS: [string, string][] = [
  ["post", "/v1/api_keys"], ["get", "/v1/api_keys"], ["get", "/v1/api_keys/{api_key_id}"], ["put", "/v1/api_keys/{api_key_id}"], ["delete", "/v1/api_keys/{api_key_id}"],
  ["get", "/v1/api_clients/{api_client_id}"], ["put", "/v1/api_clients/{api_client_id}"],
  ["post", "/v1/queues"], ["get", "/v1/queues"], ["get", "/v1/queues/{queue_id}"], ["put", "/v1/queues/{queue_id}"], ["delete", "/v1/queues/{queue_id}"],
  ["post", "/v1/queues/{queue_id}/listeners"], ["get", "/v1/queues/{queue_id}/listeners"], ["get", "/v1/listeners"],
  ["get", "/v1/queues/{queue_id}/listeners/{listener_id}"], ["put", "/v1/queues/{queue_id}/listeners/{listener_id}"],
  ["delete", "/v1/queues/{queue_id}/listeners/{listener_id}"],
  ["get", "/v1/queues/{queue_id}/listeners/{listener_id}/secret"], ["post", "/v1/queues/{queue_id}/listeners/{listener_id}/secret/rotate"],
  ["post", "/v1/queues/{queue_id}/messages"], ["get", "/v1/queues/{queue_id}/messages"], ["get", "/v1/messages"],
  ["get", "/v1/queues/{queue_id}/messages/{message_id}"], ["put", "/v1/queues/{queue_id}/messages/{message_id}"],
  ["delete", "/v1/queues/{queue_id}/messages/{message_id}"], ["get", "/v1/queues/{queue_id}/messages/{message_id}/attempts"],
  ["get", "/v1/queues/{queue_id}/schemas/{schema_id}"], ["get", "/v1/events"],
];

test("the OpenAPI 3 document lists every endpoint with a summary, without a key", async () => {
  const doc = await fanout.call("h2", "GET", "/v1/openapi.json", { key: null });
  expect(doc.status).toBe(200);
  expect(doc.body.openapi).toMatch(/^3\./);
  const paths = doc.body.paths as Record<string, Record<string, { summary?: string }>>;
  const missing = ENDPOINTS.filter(([method, path]) => !paths[path]?.[method]?.summary).map((e) => e.join(" "));
  expect(missing).toEqual([]);
  expect(paths["/v1/queues"].post).toHaveProperty("requestBody");
});
