// The plain-HTTP send path against raw TCP receivers on 127.0.0.1, which answer byte for byte what each test
// writes: the framings, splits and early closes a real server can produce, and that a Bun.serve would hide.
import { afterEach, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { makeTargetPolicy, send, type Resolver, type SendResult } from "../egress";
import { SocketPool } from "./client";
import { TLS_CERT, TLS_KEY } from "../testing/certificate";
import { waitFor } from "../../../test/e2e/harness.ts";

type Peer = { socket: Socket<Peer>; input: string; requests: number };
/** Called with each complete request (head and body as text); answers by writing to the socket. */
type Answer = (socket: Socket<Peer>, request: { head: string; body: string }, index: number, peer: Peer) => void;
type RawReceiver = { port: number; requests: { head: string; body: string }[]; connections: () => number; closed: () => number; bytes: () => number };

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function rawReceiver(answer: Answer, tls?: { cert: string; key: string }): RawReceiver {
  const requests: { head: string; body: string }[] = [];
  let connections = 0;
  let bytes = 0;
  let closed = 0;
  const listener = Bun.listen<Peer>({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    socket: {
      close() {
        closed++;
      },
      open(socket) {
        connections++;
        socket.data = { socket, input: "", requests: 0 };
      },
      data(socket, chunk) {
        const peer = socket.data;
        bytes += chunk.length;
        peer.input += chunk.toString("latin1");
        for (;;) {
          const end = peer.input.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = peer.input.slice(0, end);
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          if (peer.input.length < end + 4 + length) return;
          const body = Buffer.from(peer.input.slice(end + 4, end + 4 + length), "latin1").toString("utf8");
          peer.input = peer.input.slice(end + 4 + length);
          requests.push({ head, body });
          answer(socket, { head, body }, requests.length - 1, peer);
        }
      },
    },
  });
  cleanups.push(() => listener.stop(true));
  return { port: listener.port, requests, connections: () => connections, closed: () => closed, bytes: () => bytes };
}


const base = { body: '{"a":1}', headers: { "content-type": "application/json" }, timeoutMs: 2_000, policy: makeTargetPolicy(["127.0.0.1/32"]) };

function newPool(): SocketPool {
  const pool = new SocketPool();
  cleanups.push(() => pool.destroy());
  return pool;
}

function status(result: SendResult) {
  if (result.status === null) throw new Error(`expected a status, got error ${result.error}`);
  return result;
}

const post = (port: number, pool: SocketPool, extra: Partial<Parameters<typeof send>[0]> = {}) =>
  send({ ...base, url: `http://127.0.0.1:${port}/hook?q=1`, pool, poolKey: "l1", ...extra });

describe("send over plain HTTP (http1 client)", () => {
  test("writes one HTTP/1.1 request with Host, Content-Length and the caller's headers", async () => {
    const r = rawReceiver((s) => s.write("HTTP/1.1 204 No Content\r\n\r\n"));
    const result = status(await post(r.port, newPool(), { body: '{"ü":1}' }));
    expect(result.status).toBe(204);
    const [request] = r.requests;
    expect(request!.head.split("\r\n")[0]).toBe("POST /hook?q=1 HTTP/1.1");
    expect(request!.head).toContain(`host: 127.0.0.1:${r.port}`);
    expect(request!.head).toContain(`content-length: ${Buffer.byteLength('{"ü":1}')}`);
    expect(request!.head).toContain("content-type: application/json");
    expect(request!.body).toBe('{"ü":1}');
  });

  test("a chunked answer split byte by byte is read whole, and the connection is reused", async () => {
    const answer = "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\nRetry-After: 7\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n";
    const r = rawReceiver(async (s) => {
      for (const byte of answer) {
        s.write(byte);
        await Bun.sleep(0);
      }
    });
    const pool = newPool();
    for (let i = 0; i < 2; i++) {
      expect(status(await post(r.port, pool))).toMatchObject({ status: 500, retryAfter: "7", bodySnippet: "hello world" });
    }
    expect(r.connections()).toBe(1);
  });

  test("interim 1xx answers are skipped; Content-Length bodies are read to their length", async () => {
    const r = rawReceiver((s) => s.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"));
    const pool = newPool();
    expect(status(await post(r.port, pool))).toMatchObject({ status: 202, bodySnippet: "ok" });
    expect(status(await post(r.port, pool)).status).toBe(202);
    expect(r.connections()).toBe(1);
  });

  test("Connection: close and HTTP/1.0 answers are not reused", async () => {
    const r = rawReceiver((s, _req, i) => {
      s.write(i === 0 ? "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n" : "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
      s.end();
    });
    const pool = newPool();
    for (let i = 0; i < 3; i++) expect(status(await post(r.port, pool)).status).toBe(200);
    expect(r.connections()).toBe(3);
  });

  test("an answer with Content-Length and Transfer-Encoding is read as chunked and its connection closed", async () => {
    const r = rawReceiver((s, _req, i) => {
      if (i === 0) s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
      else s.write("HTTP/1.1 200 OK\r\nConnection: keep-alive-not-close\r\nContent-Length: 2\r\n\r\nok");
    });
    const pool = newPool();
    expect(status(await post(r.port, pool))).toMatchObject({ status: 200, bodySnippet: "hello" });
    await waitFor(() => r.closed() === 1);
    // A Connection token that merely contains "close" keeps the connection.
    for (let i = 0; i < 2; i++) expect(status(await post(r.port, pool)).bodySnippet).toBe("ok");
    expect(r.connections()).toBe(2);
  });

  test("an answer without a length is read until the close", async () => {
    const r = rawReceiver((s) => {
      s.write("HTTP/1.1 200 OK\r\n\r\nuntil ");
      setTimeout(() => s.end("the end"), 20);
    });
    expect(status(await post(r.port, newPool()))).toMatchObject({ status: 200, bodySnippet: "until the end" });
  });

  test("a kept connection the server has closed is replaced, and the request still arrives", async () => {
    // The server answers with keep-alive and closes a moment later, as an idle timeout would.
    const r = rawReceiver((s) => {
      s.write("HTTP/1.1 204 No Content\r\n\r\n");
      setTimeout(() => s.end(), 5);
    });
    const pool = newPool();
    expect(status(await post(r.port, pool)).status).toBe(204);
    await waitFor(() => r.closed() === 1);
    expect(status(await post(r.port, pool)).status).toBe(204);
    expect(r.requests).toHaveLength(2);
    expect(r.connections()).toBe(2);
  });

  test("a kept connection closed as the next request arrives is retried once on a new one", async () => {
    // The race of an idle timeout: the second request on a connection meets the server's close.
    const r = rawReceiver((s, _req, _i, peer) => {
      if (++peer.requests === 2) s.end();
      else s.write("HTTP/1.1 204 No Content\r\n\r\n");
    });
    const pool = newPool();
    expect(status(await post(r.port, pool)).status).toBe(204);
    expect(status(await post(r.port, pool)).status).toBe(204);
    expect(r.requests).toHaveLength(3);
    expect(r.connections()).toBe(2);
  });

  test("a connection closed before any answer is an error, not a retry, when it was new", async () => {
    const r = rawReceiver((s) => s.end());
    const result = await post(r.port, newPool());
    expect(result).toMatchObject({ status: null, error: "connection reset" });
    expect(r.requests).toHaveLength(1);
  });

  test("a body past 1 KiB is cut and its connection dropped; a malformed answer is an error", async () => {
    const big = "x".repeat(5000);
    const r = rawReceiver((s, _req, i) => {
      if (i === 0) s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n${big}`);
      else s.write("NOT HTTP\r\n\r\n");
    });
    const pool = newPool();
    const first = status(await post(r.port, pool));
    expect(first.bodySnippet).toBe("x".repeat(1024));
    const second = await post(r.port, pool);
    expect(second).toMatchObject({ status: null, error: "malformed response status line" });
    expect(r.connections()).toBe(2);
  });

  test("a request larger than the socket buffer is written whole", async () => {
    const body = JSON.stringify({ data: "y".repeat(256 * 1024) });
    const r = rawReceiver((s) => s.write("HTTP/1.1 204 No Content\r\n\r\n"));
    expect(status(await post(r.port, newPool(), { body })).status).toBe(204);
    expect(r.requests[0]!.body).toBe(body);
  });

  test("destroying the pool closes every idle connection", async () => {
    const r = rawReceiver((s) => setTimeout(() => s.write("HTTP/1.1 204 No Content\r\n\r\n"), 10));
    const pool = new SocketPool();
    await Promise.all(Array.from({ length: 4 }, () => post(r.port, pool)));
    expect(r.connections()).toBe(4);
    pool.destroy();
    await waitFor(() => r.closed() === 4);
  });

  test("idle connections are bounded in all, across listeners: the least recently used one is closed", async () => {
    const r = rawReceiver((s) => s.write("HTTP/1.1 204 No Content\r\n\r\n"));
    const pool = new SocketPool({ maxIdlePerKey: 4, maxIdle: 3 });
    cleanups.push(() => pool.destroy());
    const to = (key: string) => post(r.port, pool, { poolKey: key });
    for (const key of ["a", "b", "c", "d", "e"]) {
      expect(status(await to(key)).status).toBe(204);
      expect(pool.idleCount).toBeLessThanOrEqual(3);
    }
    // a and b were closed to make room; c is used again, so d is now the least recently used.
    await waitFor(() => r.closed() === 2);
    await to("c");
    expect(r.connections()).toBe(5);
    await to("a");
    expect(r.connections()).toBe(6);
    await waitFor(() => r.closed() === 3);
    await to("c");
    await to("e");
    expect(r.connections()).toBe(6);
    await to("d");
    expect(r.connections()).toBe(7);
    expect(pool.idleCount).toBe(3);
  });

  test("concurrent requests of one listener each get a connection; all come back to the pool", async () => {
    const r = rawReceiver((s) => setTimeout(() => s.write("HTTP/1.1 204 No Content\r\n\r\n"), 10));
    const pool = newPool();
    const results = await Promise.all(Array.from({ length: 5 }, () => post(r.port, pool)));
    expect(results.map((x) => x.status)).toEqual([204, 204, 204, 204, 204]);
    await Promise.all(Array.from({ length: 5 }, () => post(r.port, pool)));
    expect(r.connections()).toBe(5);
  });
});

describe("send over HTTPS (http1 client)", () => {
  const tls = { cert: TLS_CERT, key: TLS_KEY }; // a certificate for localhost and 127.0.0.1
  const to = (name: string): Resolver => async () => (name ? [{ address: "127.0.0.1", family: 4 }] : []);
  const answer: Answer = (s, req) => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${req.head.length}\r\n\r\n${req.head}`);

  test("a certificate that fails its check gets no byte of the request", async () => {
    const r = rawReceiver(answer, tls);
    const pool = newPool();
    // Not trusted (self-signed), then trusted but for other names than the URL's.
    const untrusted = await send({ ...base, url: `https://localhost:${r.port}/hook`, resolve: to("localhost"), pool });
    expect(untrusted.status === null && untrusted.error).toStartWith("tls: ");
    const wrongName = await send({ ...base, url: `https://hooks.example:${r.port}/hook`, resolve: to("hooks.example"), ca: TLS_CERT, pool });
    expect(wrongName.status === null && wrongName.error).toStartWith("tls: ");
    await waitFor(() => r.closed() === 2);
    expect(r.requests).toHaveLength(0);
    expect(r.bytes()).toBe(0);
  });

  test("a trusted certificate for the URL's name: the request goes to the checked address with the name as Host, kept alive", async () => {
    const r = rawReceiver(answer, tls);
    const pool = newPool();
    for (let i = 0; i < 3; i++) {
      const result = status(await send({ ...base, url: `https://localhost:${r.port}/hook`, resolve: to("localhost"), ca: TLS_CERT, pool, poolKey: "l1" }));
      expect(result.bodySnippet).toContain(`host: localhost:${r.port}`);
    }
    // An IP literal is checked against the certificate's addresses.
    expect(status(await send({ ...base, url: `https://127.0.0.1:${r.port}/hook`, ca: TLS_CERT, pool })).status).toBe(200);
    expect(r.requests).toHaveLength(4);
    expect(r.connections()).toBe(2);
  });
});
