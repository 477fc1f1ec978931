/**
 * Requests broken at the protocol level, sent as raw bytes (HTTP/1.1) or through node:http2. Bodies over the
 * limit get fanout's JSON 413 whatever their framing; the cases Bun answers itself, before fanout sees the
 * request, are pinned here as docs/security.md lists them, so a Bun upgrade that changes one shows up. After each,
 * the server still answers an ordinary request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { startFanout, type Fanout } from "./harness.ts";
import { H1Connection, H2Client, requestBytes, type Outcome } from "./raw.ts";

const KEY = `protocol-key-${crypto.randomUUID()}`;
let fanout: Fanout;
let queue: string;
beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_BOOTSTRAP_KEY: KEY } });
  queue = (await fanout.call("h1", "POST", "/v1/queues", { body: { name: "protocol" } })).body.queue.id;
});
afterAll(async () => fanout?.stop());

const LIMIT = 1024 * 1024;
const oversized = JSON.stringify({ name: "x".repeat(LIMIT + 100) });
const h1 = (bytes: string | Uint8Array) => {
  const connection = new H1Connection(fanout.url);
  return connection.send(bytes).finally(() => connection.close());
};
const head = (extra: [string, string][] = []): [string, string][] => [["Host", "localhost"], ["X-API-KEY", KEY], ...extra];

async function expectStillServing() {
  const reply = await fanout.call("h1", "GET", "/v1/queues?per_page=1");
  expect(reply.status).toBe(200);
}

async function expectNothingCreated() {
  const listed = await fanout.call("h1", "GET", "/v1/queues?per_page=100");
  expect(listed.body.queues.map((q: { name: string }) => q.name)).toEqual(["protocol"]);
}

const jsonError = (o: Outcome) => ({ status: o.status, body: JSON.parse(o.text || "null") });
const TOO_LARGE = { title: "Content Too Large", status: 413, detail: `Request bodies are limited to ${LIMIT} bytes.` };

describe("bodies over the limit get a JSON 413 whatever their framing", () => {
  const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
  const chunkedHead = head([["Content-Type", "application/json"], ["Transfer-Encoding", "chunked"]]);

  test("HTTP/1.1 chunked, to the app and to the hot publish route: 413 once the body is read, on a kept connection", async () => {
    const connection = new H1Connection(fanout.url);
    try {
      for (const path of ["/v1/queues", `/v1/queues/${queue}/messages`]) {
        const reply = await connection.send(requestBytes("POST", path, chunkedHead, `${chunk(oversized)}0\r\n\r\n`));
        expect(jsonError(reply)).toEqual({ status: 413, body: TOO_LARGE });
        expect(reply.headers.connection).toBeUndefined();
      }
      const after = await connection.send(requestBytes("GET", "/v1/queues", head()));
      expect(after.status).toBe(200);
    } finally {
      connection.close();
    }
    await expectNothingCreated();
  });

  test("HTTP/1.1 chunked past 8 MiB: 413 and the connection closes, so the server stops reading", async () => {
    const block = "x".repeat(1 << 20);
    const body = `${chunk(`{"name":"`)}${chunk(block).repeat(8)}${chunk("x")}`; // the chunked stream stays open
    const reply = await h1(requestBytes("POST", "/v1/queues", chunkedHead, body));
    expect([jsonError(reply), reply.headers.connection]).toEqual([{ status: 413, body: TOO_LARGE }, "close"]);
    await expectNothingCreated();
  });

  test("HTTP/1.1 with a declared length over the limit: 413 at once, before the body; past 8 MiB the connection closes", async () => {
    const cases: [string, string | undefined][] = [["5000000", undefined], ["9000000000000000", "close"]];
    for (const [length, connection] of cases) {
      const reply = await h1(requestBytes("POST", "/v1/queues", head([["Content-Type", "application/json"], ["Content-Length", length]]), "{"));
      expect(jsonError(reply)).toEqual({ status: 413, body: TOO_LARGE });
      expect(reply.headers.connection).toBe(connection as string);
    }
    // A refusal for another reason closes too: Bun would otherwise read and discard the whole declared body.
    const typed = await h1(requestBytes("POST", "/v1/queues", head([["Content-Type", "text/plain"], ["Content-Length", "50000000"]]), "x"));
    expect([typed.status, typed.headers.connection]).toEqual([415, "close"]);
    await expectStillServing();
  });

  test("HTTP/2 without content-length, and with one over the limit: 413", async () => {
    const client = new H2Client(fanout.url);
    try {
      for (const path of ["/v1/queues", `/v1/queues/${queue}/messages`, `/v1/queues/${queue}/listeners`]) {
        const reply = await client.send({ ":method": "POST", ":path": path, "content-type": "application/json", "x-api-key": KEY }, oversized);
        expect(reply !== "refused" && jsonError(reply)).toEqual({ status: 413, body: TOO_LARGE });
      }
      const declared = await client.send({ ":method": "POST", ":path": "/v1/queues", "content-type": "application/json", "content-length": "5000000", "x-api-key": KEY }, "{");
      expect(declared !== "refused" && jsonError(declared)).toEqual({ status: 413, body: TOO_LARGE });
      const small = await client.send({ ":method": "POST", ":path": `/v1/queues/${queue}/messages`, "content-type": "application/json", "x-api-key": KEY }, '{"data":1}');
      expect(small !== "refused" && small.status).toBe(200);
    } finally {
      client.close();
    }
    await expectNothingCreated();
  });
});

/** What Bun sends for requests it refuses itself; the status line only (`""`: nothing at all). */
const statusLine = (o: Outcome) => (o.status ? `${o.status} ${o.text}` : `${o.ending}: nothing`);

describe("requests Bun answers itself (docs/security.md), before fanout sees them", () => {
  const many = Array.from({ length: 200 }, (_, i) => [`x-h${i}`, "v"] as [string, string]);
  const cases: [string, string | Uint8Array, string][] = [
    ["an unknown method", requestBytes("FOO", "/v1/queues", head()), "closed: nothing"],
    ["a lowercase method", requestBytes("get", "/v1/queues", head()), "closed: nothing"],
    ["a 64 KB header", requestBytes("GET", "/v1/queues", head([["x-big", "a".repeat(65536)]])), "431 "],
    ["200 headers", requestBytes("GET", "/v1/queues", head(many)), "431 "],
    ["a 100 KB request line", requestBytes("GET", `/v1/queues?x=${"a".repeat(100_000)}`, head()), "431 "],
    ["a header line without a colon", "GET /v1/queues HTTP/1.1\r\nHost: localhost\r\nbogus header\r\n\r\n", "400 "],
    ["Content-Length with Transfer-Encoding", requestBytes("POST", "/v1/queues", head([["Content-Type", "application/json"], ["Content-Length", "2"], ["Transfer-Encoding", "chunked"]]), "2\r\n{}\r\n0\r\n\r\n"), "400 "],
    ["a bad chunk size", requestBytes("POST", "/v1/queues", head([["Content-Type", "application/json"], ["Transfer-Encoding", "chunked"]]), "zz\r\n{}\r\n0\r\n\r\n"), "400 "],
    ["a Content-Length of 18 digits", requestBytes("POST", "/v1/queues", head([["Content-Type", "application/json"], ["Content-Length", "999999999999999999"]]), "{}"), "400 "],
    ["HTTP/2.0 in a request line", `GET /v1/queues HTTP/2.0\r\nHost: localhost\r\n\r\n`, "505 "],
    ["no Host header", `GET /v1/queues HTTP/1.1\r\nX-API-KEY: k\r\n\r\n`, "400 "],
  ];
  for (const [name, bytes, expected] of cases) {
    test(`HTTP/1.1, ${name}: ${expected}`, async () => {
      expect(statusLine(await h1(bytes))).toBe(expected);
      await expectStillServing();
    });
  }

  test("plain HTTP to the TLS port: the connection closes with nothing", async () => {
    const port = Number(new URL(fanout.url).port);
    const received = await new Promise<string>((resolve) => {
      let text = "";
      const socket = net.connect(port, "127.0.0.1", () => socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
      socket.on("data", (d) => (text += d.toString("latin1")));
      socket.on("close", () => resolve(text));
      socket.on("error", () => undefined); // the close that follows settles it
    });
    expect(received).not.toContain("HTTP/1.1");
    await expectStillServing();
  });

  test("HTTP/2: an unknown method is an empty 501, 200 headers an empty 431, a 64 KB header ends the session", async () => {
    const client = new H2Client(fanout.url);
    const send = async (headers: Record<string, string>) => {
      const reply = await client.send({ ":path": "/v1/queues", "x-api-key": fanout.key, ...headers });
      return reply === "refused" ? "refused" : statusLine(reply);
    };
    try {
      expect(await send({ ":method": "FOO" })).toBe("501 ");
      expect(await send({ ":method": "GET", ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-h${i}`, "v"])) })).toBe("431 ");
      expect(await send({ ":method": "GET", "x-big": "a".repeat(65536) })).toBe("reset: nothing");
      expect(await send({ ":method": "POST", "content-type": "application/json", "content-length": "10" })).toBe("reset: nothing");
      expect(await send({ ":method": "GET" })).toStartWith("200 {");
    } finally {
      client.close();
    }
  });
});
