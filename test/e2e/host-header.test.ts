/**
 * The Host header (or :authority) shapes request.url, which routing and links read. A Host Bun cannot make a URL
 * of leaves request.url relative, and a port out of range or not a number leaves one that does not parse: such a
 * request gets a JSON 400 on every path, before routing. A host too short
 * for Elysia's router (its path search starts at index 11 of the URL) is routed like any other, and links keep it.
 * Raw sockets send the header as written; no client lowercases or checks it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import https from "node:https";
import { startFanout, type Fanout } from "./harness.ts";
import { H1Connection, H2Client, requestBytes, type Outcome } from "./raw.ts";

const USABLE_HOST = "The Host header is not a usable host name and port.";

let fanout: Fanout;
let plain: Fanout;
beforeAll(async () => {
  [fanout, plain] = await Promise.all([startFanout(), startFanout({ env: { FANOUT_TLS: "off" } })]);
});
afterAll(async () => Promise.all([fanout?.stop(), plain?.stop()]));

function call(f: Fanout, method: string, path: string, host: string, body?: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host, "x-api-key": f.key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = https.request(`${f.url}${path}`, { method, headers, rejectUnauthorized: false, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("a Host Bun cannot use gets a JSON 400 on every path and changes nothing; a usable one is served", async () => {
  const bad = "bücher.de";
  const refused = [
    await call(fanout, "POST", "/v1/queues", bad, JSON.stringify({ name: "q" })),
    await call(fanout, "GET", "/queues?per_page=1", bad),
    await call(fanout, "GET", "/v1/events?limit=1", bad),
    await call(fanout, "GET", "/healthz", bad),
  ];
  for (const reply of refused) expect(reply).toEqual({ status: 400, body: { title: "Bad Request", status: 400, detail: USABLE_HOST } });
  const listed = await call(fanout, "GET", "/v1/queues?name=none", "localhost");
  expect(listed.status).toBe(200);
  expect(listed.body.queues.some((q: { name: string }) => q.name === "q")).toBe(false);
  expect(listed.body._links.self.href.startsWith("https://localhost")).toBe(true);
});

type Send = (method: string, path: string, host: string, body?: string) => Promise<Outcome>;

function h1Sender(f: Fanout): Send {
  return (method, path, host, body) => {
    const headers: [string, string][] = [["Host", host], ["X-API-KEY", f.key]];
    if (body !== undefined) headers.push(["Content-Type", "application/json"], ["Content-Length", String(Buffer.byteLength(body))]);
    const connection = new H1Connection(f.url);
    return connection.send(requestBytes(method, path, [...headers, ["Connection", "close"]], body)).finally(() => connection.close());
  };
}

function h2Sender(f: Fanout): Send {
  const client = new H2Client(f.url);
  return async (method, path, host, body) => {
    const headers: Record<string, string> = { ":method": method, ":path": path, ":authority": host, "x-api-key": f.key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const outcome = await client.send(headers, body);
    if (outcome === "refused") throw new Error(`node:http2 refused :authority ${host}`);
    return outcome;
  };
}

/** Routing, links and errors for one host: the canonical and the unprefixed path, the hot publish route, a 405. */
async function expectServed(send: Send, scheme: string, host: string) {
  const origin = `${scheme}://${host.toLowerCase()}`;
  const made = await send("POST", "/v1/queues", host, JSON.stringify({ name: `q-${crypto.randomUUID()}` }));
  expect([made.status, JSON.parse(made.text)._links?.self?.href?.startsWith(`${origin}/v1/queues/`)]).toEqual([200, true]);
  const q = JSON.parse(made.text).queue.id;
  for (const path of ["/v1/queues?per_page=1", "/queues?per_page=1"]) {
    const listed = await send("GET", path, host);
    expect([listed.status, JSON.parse(listed.text)._links.self.href]).toEqual([200, `${origin}/v1/queues`]);
    expect(listed.headers.link).toContain(`<${origin}/v1/queues?`);
  }
  const published = await send("POST", `/v1/queues/${q}/messages`, host, JSON.stringify({ data: 1 }));
  expect([published.status, JSON.parse(published.text)._links.queue.href]).toEqual([200, `${origin}/v1/queues/${q}`]);
  const published2 = await send("POST", `/queues/${q}/messages?pretty`, host, JSON.stringify({ data: 2 }));
  expect([published2.status, JSON.parse(published2.text)._links.queue.href]).toEqual([200, `${origin}/v1/queues/${q}`]);
  const wrong = await send("DELETE", "/v1/queues", host);
  expect([wrong.status, wrong.headers.allow, JSON.parse(wrong.text).status]).toEqual([405, "POST, GET", 405]);
  expect((await send("GET", "/healthz", host)).status).toBe(200);
}

const BAD_PORTS = ["example.com:65536", "example.com:99999", "example.com:-1", "example.com:abc", "[::1]:70000", "example.com:1:2", "[::1"];

/** Every kind of route, the ones that build links included, answers such a host 400 and changes nothing. */
async function expectRefused(send: Send, host: string) {
  const good = "localhost";
  const q = JSON.parse((await send("POST", "/v1/queues", good, JSON.stringify({ name: `q-${crypto.randomUUID()}` }))).text).queue.id;
  const m = JSON.parse((await send("POST", `/v1/queues/${q}/messages`, good, JSON.stringify({ data: 1 }))).text).message.id;
  const message = `/v1/queues/${q}/messages/${m}`;
  const requests: [string, string, string?][] = [
    ["TRACE", message], ["PATCH", message, "{}"], ["POST", `${message}/redeliver`, ""], ["GET", message], ["PUT", message, "{}"],
    ["POST", `/v1/queues/${q}/messages`, JSON.stringify({ data: 2 })], ["POST", `/queues/${q}/messages`, JSON.stringify({ data: 3 })],
    ["POST", `/v1/queues/${q}/messages?pretty`, JSON.stringify({ data: 4 })], ["DELETE", message], ["GET", "/healthz"], ["GET", "/v1/openapi.json"],
  ];
  for (const [method, path, body] of requests) {
    const reply = await send(method, path, host, body);
    expect({ method, path, status: reply.status, body: JSON.parse(reply.text || "null") })
      .toEqual({ method, path, status: 400, body: { title: "Bad Request", status: 400, detail: USABLE_HOST } });
  }
  const listed = JSON.parse((await send("GET", `/v1/queues/${q}/messages`, good)).text);
  expect(listed.messages.map((x: { id: string }) => x.id)).toEqual([m]);
}

describe("a port out of range or not a number is refused like any unusable host, never a 500", () => {
  for (const host of BAD_PORTS) {
    test(`HTTP/1.1, Host: ${host}`, () => expectRefused(h1Sender(fanout), host));
    test(`HTTP/2, :authority ${host}`, () => expectRefused(h2Sender(fanout), host));
  }
  test("an empty port is no port: `example.com:` is served as `example.com`", async () => {
    const send = h1Sender(fanout);
    const made = await send("POST", "/v1/queues", "example.com:", JSON.stringify({ name: `q-${crypto.randomUUID()}` }));
    expect([made.status, JSON.parse(made.text)._links.self.href.startsWith("https://example.com/v1/queues/")]).toEqual([200, true]);
  });
});

const HOSTS = ["x", "X", "ab", "a:1", "[::1]", "127.0.0.1", "api.example.com:8443"];

describe("short and odd hosts are routed like any other, and links keep them", () => {
  for (const host of HOSTS) {
    test(`HTTP/1.1, Host: ${host}`, () => expectServed(h1Sender(fanout), "https", host));
    test(`HTTP/2, :authority ${host}`, () => expectServed(h2Sender(fanout), "https", host));
  }
  // Without TLS the origin is one character shorter ("http://"): a three-letter host is already too short.
  for (const host of ["abc", "a:1", "x"]) test(`plain HTTP/1.1, Host: ${host}`, () => expectServed(h1Sender(plain), "http", host));
});
