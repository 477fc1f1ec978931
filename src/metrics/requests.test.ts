import { expect, test } from "bun:test";
import { RequestTally, routeLabels, UNMATCHED } from "./requests.ts";

const PATTERNS = ["/healthz", "/metrics", "/v1/queues", "/v1/queues/:queue_id", "/v1/queues/:queue_id/messages",
  "/v1/queues/:queue_id/messages/:message_id", "/v1/listeners", "/v1/queues/:queue_id/listeners/:listener_id/secret/rotate"];

test("a path is labelled with its route's pattern, never with an id", () => {
  const label = routeLabels(PATTERNS);
  expect(label("/v1/queues/q_123/messages")).toBe("/v1/queues/:queue_id/messages");
  expect(label("/v1/queues/q_123/messages/msg_9")).toBe("/v1/queues/:queue_id/messages/:message_id");
  expect(label("/v1/queues/q_1/listeners/l_2/secret/rotate")).toBe("/v1/queues/:queue_id/listeners/:listener_id/secret/rotate");
  expect(label("/v1/queues/q_123/")).toBe("/v1/queues/:queue_id");
  expect(label("/v1/queues")).toBe("/v1/queues");
  expect(label("/metrics")).toBe("/metrics");
});

test("a fixed segment wins over a parameter; unknown paths share one label", () => {
  const label = routeLabels([...PATTERNS, "/v1/queues/special"]);
  expect(label("/v1/queues/special")).toBe("/v1/queues/special");
  expect(label("/v1/queues/other")).toBe("/v1/queues/:queue_id");
  for (const path of ["/", "/v2/queues", "/v1/queues/q_1/nope", "/v1/queues//messages", `/v1/${"x".repeat(500)}`, "/v1/listeners/l_1"]) {
    expect({ path, label: label(path) }).toEqual({ path, label: UNMATCHED });
  }
});

test("the tally counts by method, route and status, and unknown methods share one label", () => {
  const tally = new RequestTally();
  tally.record("POST", "/v1/queues", 200, 0.002);
  tally.record("POST", "/v1/queues", 200, 0.004);
  tally.record("POST", "/v1/queues", 409, 0.001);
  tally.record("BREW", UNMATCHED, 404, 0.001);
  expect([...tally.counts()]).toEqual([
    { labels: { method: "POST", route: "/v1/queues", status: "200" }, value: 2 },
    { labels: { method: "POST", route: "/v1/queues", status: "409" }, value: 1 },
    { labels: { method: "other", route: UNMATCHED, status: "404" }, value: 1 },
  ]);
  const [post] = [...tally.durations()];
  expect(post!.labels).toEqual({ method: "POST", route: "/v1/queues" });
  expect(post!.buckets.count).toBe(3);
  expect(post!.buckets.sum).toBeCloseTo(0.007, 9);
});
