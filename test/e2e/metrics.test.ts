/**
 * GET /metrics on the real server: the figures move as the service works (publishes, attempts by outcome,
 * missed, held, listeners by state), labels never carry ids, and the token-or-loopback rule. The tests are
 * loopback clients; the refusal of other addresses goes through --trust-proxy here (the server then takes the
 * client from X-Forwarded-For) and is checked address by address in src/metrics/access.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout } from "./harness.ts";
import { deliveryApi, receiverSet, status, type Receiver } from "./receiver.ts";
import { scrape, scrapeUntil, type Metrics } from "./prometheus.ts";

const ORG = "local.fanout";
const TOKEN = "scrape-token-0123456789abcdef";
const receivers = receiverSet();
let ok: Receiver;

beforeAll(async () => {
  ok = await receivers.start();
});
afterAll(() => receivers.closeAll());

/** A loopback port with nothing listening: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

describe("a server with a short retry schedule, behind a trusted proxy", () => {
  let fanout: Fanout;
  beforeAll(async () => {
    fanout = await startFanout({ env: { FANOUT_RETRY_SCHEDULE: "50ms,50ms", FANOUT_DELIVERY_TIMEOUT: "300ms", FANOUT_TRUST_PROXY: "on" } });
  });
  afterAll(async () => void (await fanout?.stop()));

  test("N publishes move the published counter and the publish route by N, over both protocols and both routes", async () => {
    const api = deliveryApi(fanout);
    const queue = await api.queue();
    const before = await scrape(fanout);
    const publishRoute = { method: "POST", route: "/v1/queues/:queue_id/messages", status: "200" };
    for (const proto of PROTOS) {
      for (let i = 0; i < 3; i++) expect((await fanout.call(proto, "POST", `/v1/queues/${queue}/messages`, { body: { data: i } })).status).toBe(200);
      // A query string sends the publish through the Elysia app instead of the hot route: counted the same.
      expect((await fanout.call(proto, "POST", `/v1/queues/${queue}/messages?pretty=true`, { body: { data: "x" } })).status).toBe(200);
    }
    const after = await scrape(fanout);
    expect(after.value("fanout_messages_published_total", { org: ORG })! - before.value("fanout_messages_published_total", { org: ORG })!).toBe(8);
    expect(after.value("fanout_http_requests_total", publishRoute)! - (before.value("fanout_http_requests_total", publishRoute) ?? 0)).toBe(8);
    const duration = after.histogram("fanout_http_request_duration_seconds", { method: "POST", route: "/v1/queues/:queue_id/messages" })!;
    expect(duration.count).toBeGreaterThanOrEqual(8);
    expect(duration.buckets.get("+Inf")).toBe(duration.count);
  });

  test("route labels are patterns, never ids; unknown paths share one label; process figures are there", async () => {
    const api = deliveryApi(fanout);
    const queue = await api.queue();
    const message = await api.publish(queue, 1);
    await api.message(queue, message);
    await fanout.call("h1", "GET", `/v1/queues/${queue}/nothing-here/${message}`);
    await fanout.call("h2", "GET", `/v1/no/such/${crypto.randomUUID()}`);
    const m = await scrapeUntil(fanout, (s) => s.sum("fanout_http_requests_total", { route: "/metrics" }) > 0, "the scrape counts itself");
    const routes = new Set(m.samples("fanout_http_requests_total").map((s) => s.labels!.route!));
    expect(routes).toContain("/v1/queues/:queue_id/messages/:message_id");
    expect(m.sum("fanout_http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(2);
    for (const route of routes) expect(route === "unmatched" || /^\/(v1\/[a-z_/:]*|metrics|healthz)$/.test(route)).toBe(true);
    expect(m.text).not.toContain(queue);
    expect(m.text).not.toContain(message);
    for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds"]) {
      expect({ name, value: m.value(name)! > 0 }).toEqual({ name, value: true });
    }
    expect(m.types.get("fanout_http_request_duration_seconds")).toBe("histogram");
  });

  test("attempts by outcome, the receiver's answer time, publish to acknowledged, and missed messages", async () => {
    const failing = (await receivers.start()).answer("/notify", status(500));
    const hanging = (await receivers.start()).answer("/notify", () => "hang");
    const api = deliveryApi(fanout);
    const queue = await api.queue();
    const live = ok.livenessUrl;
    await api.listener(queue, "ok", ok);
    await api.listener(queue, "failing", { notifyUrl: failing.notifyUrl, livenessUrl: live });
    await api.listener(queue, "hanging", { notifyUrl: hanging.notifyUrl, livenessUrl: live });
    await api.listener(queue, "refused", { notifyUrl: `http://127.0.0.1:${await closedPort()}/notify`, livenessUrl: live });
    const before = await scrape(fanout);
    const attempts = (m: Metrics, outcome: string) => m.value("fanout_delivery_attempts_total", { org: ORG, outcome })!;
    await api.publish(queue, { n: 1 });
    // One attempt and two retries each for the three that never acknowledge; then all three are missed.
    const after = await scrapeUntil(fanout, (m) => m.value("fanout_messages_missed_total", { org: ORG })! - before.value("fanout_messages_missed_total", { org: ORG })! >= 3,
      "three missed messages", 15_000);
    const delta = (outcome: string) => attempts(after, outcome) - attempts(before, outcome);
    expect({ acknowledged: delta("acknowledged"), failed: delta("failed"), timeout: delta("timeout"), refused: delta("refused") })
      .toEqual({ acknowledged: 1, failed: 3, timeout: 3, refused: 3 });
    const durations = after.histogram("fanout_delivery_duration_seconds", { org: ORG })!;
    expect(durations.count - (before.histogram("fanout_delivery_duration_seconds", { org: ORG })?.count ?? 0)).toBe(10);
    expect(durations.sum).toBeGreaterThanOrEqual(3 * 0.3 * 0.9); // three timeouts of 300 ms
    const toAck = after.histogram("fanout_publish_to_acknowledged_seconds", { org: ORG })!;
    expect(toAck.count - (before.histogram("fanout_publish_to_acknowledged_seconds", { org: ORG })?.count ?? 0)).toBe(1);
  });

  test("without a token: a loopback client is answered, a client a trusted proxy names elsewhere gets 403", async () => {
    for (const proto of PROTOS) {
      expect((await fanout.call(proto, "GET", "/metrics", { key: null })).status).toBe(200);
      const refused = await fanout.call(proto, "GET", "/metrics", { key: null, headers: { "x-forwarded-for": "203.0.113.7" } });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ title: "Forbidden", status: 403 });
      expect((await fanout.call(proto, "GET", "/metrics", { key: null, headers: { "x-forwarded-for": "127.0.0.1" } })).status).toBe(200);
    }
  });

  test("/metrics takes no version prefix, answers text whatever Accept says, and refuses other methods", async () => {
    expect((await fanout.call("h1", "GET", "/v1/metrics", { key: null })).status).toBe(401);
    expect((await fanout.call("h1", "GET", "/metrics", { key: null, headers: { accept: "text/plain" } })).status).toBe(200);
    const post = await fanout.call("h1", "POST", "/metrics", { key: null });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("a server with a metrics token", () => {
  let fanout: Fanout;
  beforeAll(async () => {
    fanout = await startFanout({ env: { FANOUT_METRICS_TOKEN: TOKEN, FANOUT_LIVENESS_INTERVAL: "100ms" } });
  });
  afterAll(async () => void (await fanout?.stop()));
  const auth = { authorization: `Bearer ${TOKEN}` };

  test("the token is required from loopback too: 401 without it or with another, 200 with it", async () => {
    for (const proto of PROTOS) {
      const refused: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}-not` }, { authorization: `Basic ${btoa(`x:${TOKEN}`)}` }];
      for (const headers of refused) {
        const reply = await fanout.call(proto, "GET", "/metrics", { key: null, headers });
        expect(reply.status).toBe(401);
        expect(reply.headers.get("www-authenticate")).toStartWith("Bearer");
        expect(reply.text).not.toContain("fanout_");
      }
      expect((await fanout.call(proto, "GET", "/metrics", { key: null, headers: auth })).status).toBe(200);
    }
  });

  test("a down listener is counted by state, its deliveries as held; a failing one's retry as pending", async () => {
    const sick = (await receivers.start()).answer("/live", status(503));
    const failing = (await receivers.start()).answer("/notify", status(500));
    const api = deliveryApi(fanout);
    const downQueue = await api.queue();
    await api.listener(downQueue, "down", sick);
    await scrapeUntil(fanout, (m) => m.value("fanout_listeners", { org: ORG, state: "down" }) === 1, "one listener down", 10_000, auth);
    for (let i = 0; i < 3; i++) await api.publish(downQueue, i);
    const held = await scrapeUntil(fanout, (m) => m.value("fanout_deliveries_held", { org: ORG }) === 3, "three deliveries held", 10_000, auth);
    expect(held.value("fanout_deliveries_pending", { org: ORG })).toBe(0);
    const retryQueue = await api.queue();
    await api.listener(retryQueue, "failing", { notifyUrl: failing.notifyUrl, livenessUrl: ok.livenessUrl });
    await api.publish(retryQueue, "x");
    // The first attempt fails; its retry waits 5 s (the default schedule): pending, not held.
    const pending = await scrapeUntil(fanout, (m) => m.value("fanout_deliveries_pending", { org: ORG }) === 1
      && m.value("fanout_listeners", { org: ORG, state: "stable" }) === 1, "one retry pending, its listener stable", 10_000, auth);
    expect(pending.value("fanout_deliveries_held", { org: ORG })).toBe(3);
    expect(pending.value("fanout_listeners", { org: ORG, state: "down" })).toBe(1);
  });
});
