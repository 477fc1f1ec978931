// Traffic goes to 127.0.0.0/8 only: receivers listen on loopback, and hostnames are resolved by stub resolvers.
import { afterEach, describe, expect, test } from "bun:test";
import http from "node:http";
import net from "node:net";
import { TLS_CERT, TLS_KEY } from "./testing/certificate";
import { SocketPool } from "./http1/client";
import { isAllowedAddress, makeTargetPolicy, resolveTarget, send, type Resolver, type SendResult } from "./egress";
import { waitFor } from "../../test/support/wait.ts";


type Seen = { method: string; path: string; host: string; headers: http.IncomingHttpHeaders; body: string };
type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
type Receiver = { port: number; seen: Seen[]; connections: () => number; close: () => void };

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function startReceiver(handler: Handler, hostname = "127.0.0.1"): Promise<Receiver> {
  const seen: Seen[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method!, path: req.url!, host: req.headers.host!, headers: req.headers, body });
      handler(req, res);
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, hostname, resolve));
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  cleanups.push(close);
  return { port: (server.address() as net.AddressInfo).port, seen, connections: () => connections, close };
}

function newPool(): SocketPool {
  const pool = new SocketPool();
  cleanups.push(() => pool.destroy());
  return pool;
}

const loopback = makeTargetPolicy(["127.0.0.1/32"]);
const ok: Handler = (_req, res) => res.end("ok");
const stubResolver = (addresses: string[]): Resolver => async () =>
  addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));


function expectError(result: SendResult): string {
  if (result.status !== null) throw new Error(`expected an error, got status ${result.status}`);
  return result.error;
}

function expectStatus(result: SendResult) {
  if (result.status === null) throw new Error(`expected a status, got error ${result.error}`);
  return result;
}

describe("isAllowedAddress", () => {
  const none = makeTargetPolicy([]);

  test("refuses everything outside the public internet", () => {
    const refused = [
      "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.1.1", "100.64.0.1", "127.0.0.1", "0.0.0.0",
      "255.255.255.255", "224.0.0.1", "192.0.2.1", "240.0.0.1", "::1", "::", "fc00::1", "fd12::1", "fe80::1",
      "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::7f00:1", "64:ff9b::a00:1", "2001:db8::1", "not-an-ip", "",
    ];
    for (const addr of refused) expect({ addr, allowed: isAllowedAddress(addr, none) }).toEqual({ addr, allowed: false });
  });

  test("accepts public unicast addresses", () => {
    for (const addr of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8", "[2606:4700::1111]"]) {
      expect({ addr, allowed: isAllowedAddress(addr, none) }).toEqual({ addr, allowed: true });
    }
  });

  test("the allow list opens exactly its ranges, IPv4-mapped forms included", () => {
    expect(isAllowedAddress("127.0.0.1", loopback)).toBe(true);
    expect(isAllowedAddress("::ffff:127.0.0.1", loopback)).toBe(true);
    expect(isAllowedAddress("127.0.0.2", loopback)).toBe(false);
    const internal = makeTargetPolicy(["10.0.0.0/8", "fd00::/8", "::ffff:192.168.0.0/112"]);
    expect(isAllowedAddress("10.1.2.3", internal)).toBe(true);
    expect(isAllowedAddress("fd00::1", internal)).toBe(true);
    expect(isAllowedAddress("192.168.4.4", internal)).toBe(true);
    expect(isAllowedAddress("172.16.0.1", internal)).toBe(false);
  });

  test("makeTargetPolicy takes bare hosts and rejects garbage", () => {
    expect(isAllowedAddress("127.0.0.3", makeTargetPolicy(["127.0.0.3"]))).toBe(true);
    expect(() => makeTargetPolicy(["10.0.0.0/33"])).toThrow();
    expect(() => makeTargetPolicy(["banana"])).toThrow();
  });
});

describe("resolveTarget", () => {
  test("only absolute http(s) URLs without credentials", async () => {
    expect(await resolveTarget("ftp://8.8.8.8/", loopback)).toMatchObject({ ok: false });
    expect(await resolveTarget("/relative", loopback)).toMatchObject({ ok: false });
    expect(await resolveTarget("http://user:pw@8.8.8.8/", loopback)).toMatchObject({ ok: false });
  });

  test("checks literal addresses, in every spelling the URL parser accepts", async () => {
    expect(await resolveTarget("http://127.0.0.1:8080/x", loopback)).toEqual({ ok: true, address: "127.0.0.1" });
    expect(await resolveTarget("http://127.0.0.2/", loopback)).toEqual({ ok: false, reason: "127.0.0.2 is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)" });
    expect(await resolveTarget("http://2130706433/", makeTargetPolicy([]))).toMatchObject({ ok: false });
    expect(await resolveTarget("http://[::1]/", makeTargetPolicy([]))).toMatchObject({ ok: false });
    expect(await resolveTarget("https://[2606:4700::1111]/", makeTargetPolicy([]))).toEqual({ ok: true, address: "2606:4700::1111" });
  });

  test("refuses a host if any resolved address is refused", async () => {
    const mixed = await resolveTarget("https://hooks.example/", makeTargetPolicy([]), stubResolver(["8.8.8.8", "10.0.0.1"]));
    expect(mixed).toEqual({ ok: false, reason: "hooks.example resolves to 10.0.0.1, which is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)" });
    const v6 = await resolveTarget("https://hooks.example/", makeTargetPolicy([]), stubResolver(["2606:4700::1111"]));
    expect(v6).toEqual({ ok: true, address: "2606:4700::1111" });
  });

  test("a literal address is decided once per policy; a name is resolved again on every send", async () => {
    const strict = makeTargetPolicy([]);
    expect(await resolveTarget("http://127.0.0.1:9/x", loopback)).toMatchObject({ ok: true });
    expect(await resolveTarget("http://127.0.0.1:9/x", strict)).toMatchObject({ ok: false });
    expect(await resolveTarget("http://127.0.0.1:9/x", loopback)).toMatchObject({ ok: true });
    let lookups = 0;
    const rebinding: Resolver = async () => (++lookups === 1 ? [{ address: "8.8.8.8", family: 4 }] : [{ address: "10.0.0.1", family: 4 }]);
    expect(await resolveTarget("https://hooks.example/", strict, rebinding)).toMatchObject({ ok: true });
    expect(await resolveTarget("https://hooks.example/", strict, rebinding)).toMatchObject({ ok: false });
    expect(lookups).toBe(2);
  });

  test("a resolution failure is a refusal, not an exception", async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error("nope"), { code: "ENOTFOUND" });
    };
    expect(await resolveTarget("https://hooks.example/", loopback, failing)).toEqual({ ok: false, reason: "cannot resolve hooks.example (ENOTFOUND)" });
    expect(await resolveTarget("https://hooks.example/", loopback, stubResolver([]))).toMatchObject({ ok: false });
  });
});

describe("send", () => {
  const base = { body: '{"a":1}', headers: { "content-type": "application/json" }, timeoutMs: 2_000, policy: loopback };

  test("a 2xx is returned with the body; the request carries body and headers", async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(204).end());
    const result = expectStatus(await send({ ...base, url: `http://127.0.0.1:${receiver.port}/hook?x=1`, pool: newPool() }));
    expect(result).toMatchObject({ status: 204, retryAfter: null, bodySnippet: "" });
    expect(receiver.seen).toEqual([expect.objectContaining({ method: "POST", path: "/hook?x=1", body: '{"a":1}' })]);
    expect(receiver.seen[0]!.headers["content-type"]).toBe("application/json");
  });

  test("GET sends no body", async () => {
    const receiver = await startReceiver(ok);
    const result = await send({ ...base, method: "GET", url: `http://127.0.0.1:${receiver.port}/live`, pool: newPool() });
    expect(expectStatus(result)).toMatchObject({ status: 200, bodySnippet: "ok" });
    expect(receiver.seen).toEqual([expect.objectContaining({ method: "GET", body: "" })]);
  });

  test("connects to the checked address while Host keeps the hostname (pinned lookup)", async () => {
    // /etc/hosts maps localhost to 127.0.0.1; the receiver only listens on 127.0.0.5, so an unpinned lookup misses it.
    const receiver = await startReceiver(ok, "127.0.0.5");
    const result = await send({
      ...base,
      url: `http://localhost:${receiver.port}/`,
      policy: makeTargetPolicy(["127.0.0.5/32"]),
      resolve: stubResolver(["127.0.0.5"]),
      pool: newPool(),
    });
    expect(expectStatus(result).status).toBe(200);
    expect(receiver.seen.map((s) => s.host)).toEqual([`localhost:${receiver.port}`]);
  });

  test("plain HTTP to a name goes to the checked address with path, query, body and the name as Host", async () => {
    const receiver = await startReceiver(ok);
    const result = await send({ ...base, url: `http://hooks.example:${receiver.port}/hook?x=1`, resolve: stubResolver(["127.0.0.1"]), pool: newPool() });
    expect(expectStatus(result).status).toBe(200);
    expect(receiver.seen).toEqual([expect.objectContaining({ method: "POST", path: "/hook?x=1", body: '{"a":1}', host: `hooks.example:${receiver.port}` })]);
  });

  test("a refused literal address is never connected to", async () => {
    const receiver = await startReceiver(ok, "127.0.0.2");
    const result = await send({ ...base, url: `http://127.0.0.2:${receiver.port}/`, pool: newPool() });
    expect(expectError(result)).toBe("refused target: 127.0.0.2 is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)");
    expect(receiver.connections()).toBe(0);
  });

  test("a hostname that now resolves to a refused address is never connected to (rebinding)", async () => {
    const receiver = await startReceiver(ok, "127.0.0.2");
    const result = await send({ ...base, url: `http://hooks.example:${receiver.port}/`, resolve: stubResolver(["127.0.0.2"]), pool: newPool() });
    expect(expectError(result)).toStartWith("refused target: hooks.example resolves to 127.0.0.2");
    expect(receiver.connections()).toBe(0);
  });

  test("a 500 is returned as its status, with Retry-After", async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(500, { "retry-after": "120" }).end("boom"));
    const result = await send({ ...base, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    expect(expectStatus(result)).toMatchObject({ status: 500, retryAfter: "120", bodySnippet: "boom" });
  });

  test("a redirect is returned, not followed", async () => {
    const receiver = await startReceiver((req, res) => {
      if (req.url === "/hook") res.writeHead(302, { location: `http://127.0.0.1:${receiver.port}/target` }).end();
      else res.end("followed");
    });
    const result = await send({ ...base, url: `http://127.0.0.1:${receiver.port}/hook`, pool: newPool() });
    expect(expectStatus(result).status).toBe(302);
    expect(receiver.seen.map((s) => s.path)).toEqual(["/hook"]);
  });

  test("a receiver that never answers times out on the watchdog", async () => {
    const receiver = await startReceiver(() => {});
    const result = await send({ ...base, timeoutMs: 300, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    // Only the watchdog's timer says this (not the hard cap, nor a socket's error), and not before its time.
    expect(expectError(result)).toBe("timeout after 300ms");
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
  });

  test("a body that stalls after the headers times out too", async () => {
    const receiver = await startReceiver((_req, res) => res.writeHead(200).write("partial"));
    const result = await send({ ...base, timeoutMs: 300, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    expect(expectError(result)).toBe("timeout after 300ms");
  });

  test("a TLS handshake that never completes times out", async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => silent.close());
    const port = (silent.address() as net.AddressInfo).port;
    const result = await send({ ...base, timeoutMs: 300, url: `https://127.0.0.1:${port}/`, pool: newPool() });
    expect(expectError(result)).toBe("timeout after 300ms");
  });

  test("a resolver that never answers times out", async () => {
    const hanging: Resolver = () => new Promise(() => {});
    const result = await send({ ...base, timeoutMs: 300, url: "http://hooks.example/", resolve: hanging, pool: newPool() });
    expect(expectError(result)).toBe("timeout after 300ms");
  });

  test("an endless response body is cut to 1 KiB and the connection dropped", async () => {
    let receiverSawClose = false;
    const receiver = await startReceiver((_req, res) => {
      res.on("close", () => (receiverSawClose = true));
      res.writeHead(200);
      const chunk = "y".repeat(64 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    const result = await send({ ...base, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    expect(expectStatus(result)).toMatchObject({ status: 200, bodySnippet: "y".repeat(1024) });
    await waitFor(() => receiverSawClose);
  });

  test("a closed port is connection refused", async () => {
    const receiver = await startReceiver(ok);
    receiver.close();
    const result = await send({ ...base, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    expect(expectError(result)).toBe("connection refused");
  });

  test("an invalid header resolves with an error instead of throwing", async () => {
    const receiver = await startReceiver(ok);
    const result = await send({ ...base, headers: { "x-bad": "a\r\nb" }, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() });
    expectError(result);
    expect(receiver.seen).toEqual([]);
  });

  test("shared headers go with every request that carries them, before the request's own", async () => {
    const receiver = await startReceiver(ok);
    const pool = newPool();
    const shared = { "x-tenant": "acme", authorization: "Bearer t" };
    for (const id of ["1", "2"]) {
      const result = await send({ ...base, sharedHeaders: shared, headers: { "x-id": id }, url: `http://127.0.0.1:${receiver.port}/`, pool });
      expect(expectStatus(result).status).toBe(200);
    }
    expect(receiver.seen.map((s) => [s.headers["x-tenant"], s.headers.authorization, s.headers["x-id"]])).toEqual([["acme", "Bearer t", "1"], ["acme", "Bearer t", "2"]]);
    const seenOrder = receiver.seen[0]!.headers;
    expect(Object.keys(seenOrder).indexOf("x-tenant")).toBeLessThan(Object.keys(seenOrder).indexOf("x-id"));
  });

  test("an invalid shared header is refused on every request that carries it", async () => {
    const receiver = await startReceiver(ok);
    const shared = { "x-bad": "a\r\nb" };
    for (let i = 0; i < 2; i++) {
      expectError(await send({ ...base, sharedHeaders: shared, url: `http://127.0.0.1:${receiver.port}/`, pool: newPool() }));
    }
    expect(receiver.seen).toEqual([]);
  });

  test("requests with the same agent key reuse the connection", async () => {
    const receiver = await startReceiver(ok);
    const pool = newPool();
    for (let i = 0; i < 3; i++) {
      const result = await send({ ...base, url: `http://127.0.0.1:${receiver.port}/`, pool, poolKey: "listener-1" });
      expect(expectStatus(result).status).toBe(200);
    }
    expect(receiver.seen).toHaveLength(3);
    expect(receiver.connections()).toBe(1);
  });

  test("https verifies certificates unless insecureTls, and keeps SNI/Host on the hostname", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.5",
      port: 0,
      tls: { cert: TLS_CERT, key: TLS_KEY },
      fetch: (req) => new Response(`host=${req.headers.get("host")}`),
    });
    cleanups.push(() => server.stop(true));
    const common = { ...base, url: `https://localhost:${server.port}/`, policy: makeTargetPolicy(["127.0.0.5"]), resolve: stubResolver(["127.0.0.5"]), pool: newPool() };
    expect(expectError(await send(common))).toStartWith("tls: ");
    const result = await send({ ...common, insecureTls: true });
    expect(expectStatus(result)).toMatchObject({ status: 200, bodySnippet: `host=localhost:${server.port}` });
  });
});

describe("send to an IP literal", () => {
  const base = { body: '{"a":1}', headers: { "content-type": "application/json", "webhook-id": "msg_1" }, timeoutMs: 2_000 };

  test("https verifies certificates unless insecureTls, and sends body and headers", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.5",
      port: 0,
      tls: { cert: TLS_CERT, key: TLS_KEY },
      fetch: async (req) => new Response(`${req.method} ${req.headers.get("webhook-id")} ${await req.text()}`),
    });
    cleanups.push(() => server.stop(true));
    const common = { ...base, url: `https://127.0.0.5:${server.port}/hook`, policy: makeTargetPolicy(["127.0.0.5"]), pool: newPool() };
    expect(expectError(await send(common))).toStartWith("tls: ");
    const result = await send({ ...common, insecureTls: true });
    expect(expectStatus(result)).toMatchObject({ status: 200, bodySnippet: 'POST msg_1 {"a":1}' });
  });

  test("a literal refused by the policy is never connected to, with or without a remembered decision", async () => {
    const receiver = await startReceiver(ok);
    const url = `http://127.0.0.1:${receiver.port}/`;
    const pool = newPool();
    expect(expectStatus(await send({ ...base, url, policy: loopback, pool })).status).toBe(200);
    expect(expectError(await send({ ...base, url, policy: makeTargetPolicy([]), pool }))).toBe("refused target: 127.0.0.1 is not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)");
    expect(receiver.seen).toHaveLength(1);
  });
});
