/**
 * The send path for plain-HTTP targets: the HTTP/1.1 request written, and its response read, on a Bun.connect
 * socket on the worker's own event loop. Bun's fetch hands each request to its HTTP client thread and back:
 * 32-34 µs of CPU per 1 KiB POST to a local receiver, against 11-13 µs here (16 keep-alive connections,
 * alternating runs), and that thread competed for the two cores with the API and publish threads. No library
 * fills this in Bun (undici is its fetch; node:http costs three times fetch), so this file is the smallest
 * client the delivery contract needs:
 * - the socket goes to the checked address only (the SSRF pin); the Host header keeps the URL's name and port;
 * - one request per connection at a time; idle connections are kept per key (a listener) for IDLE_SECONDS,
 *   under the 5 s keep-alive of common servers, so the server rarely closes one as it is reused. A reused
 *   connection that closes before any byte of the answer is retried once on a new one: the request may have
 *   arrived twice, which at-least-once delivery allows (receivers deduplicate by webhook-id);
 * - responses: 1xx skipped, Content-Length, chunked or until close; at most 1 KiB of the body is read and the
 *   connection is dropped past it, as on the other paths; a head over 64 KiB is an error;
 * - errors keep their codes (ECONNREFUSED, ECONNRESET) for egress.ts to describe; `destroy()` is the watchdog's.
 */
import type { Socket, SocketHandler } from "bun";
import { headersExcept, SNIPPET_BYTES, type ResponseHead } from "./fetch-send.ts";
import type { SendRequest, Target } from "./egress.ts";

const IDLE_SECONDS = 4;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const MAX_HEAD_BYTES = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");

type Exchange = {
  onDone: (r: ResponseHead) => void;
  onError: (e: unknown) => void;
  request: Buffer;
  /** Retry once on a new connection if this one closes before answering (it was reused, maybe stale). */
  retry: (() => void) | null;
  gotBytes: boolean;
  ended: boolean;
};

type Body =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; left: number; state: "size" | "data" | "data-end" | "trailers" }
  | { kind: "close" };

type Conn = {
  key: string;
  pool: SocketPool;
  socket: Socket<Conn> | null;
  exchange: Exchange | null;
  pending: Buffer | null; // request bytes the socket did not take yet
  input: Buffer; // response bytes not parsed yet
  head: { status: number; retryAfter: string | null; keepAlive: boolean; body: Body } | null;
  snippet: Buffer[];
  snippetBytes: number;
  destroyed: boolean;
};

/** Idle keep-alive connections per key; one per request in flight, returned after a complete response. */
export class SocketPool {
  private readonly idle = new Map<string, Conn[]>();

  constructor(private readonly maxIdlePerKey = 16) {}

  /** Sends `request` (the whole HTTP/1.1 message) to address:port on a connection kept under `key`. */
  request(key: string, address: string, port: number, request: Buffer, onDone: Exchange["onDone"], onError: Exchange["onError"]): { destroy(): void } {
    let conn: Conn | undefined;
    const exchange: Exchange = { onDone, onError, request, retry: null, gotBytes: false, ended: false };
    const fresh = () => {
      conn = this.connect(key, address, port, exchange);
    };
    const reused = this.take(key);
    if (reused) {
      exchange.retry = fresh;
      conn = reused;
      start(reused, exchange);
    } else fresh();
    return {
      destroy: () => {
        exchange.ended = true;
        if (conn) destroy(conn);
      },
    };
  }

  /** Closes every idle connection (shutdown). Connections in use close when their exchange ends. */
  close(): void {
    for (const list of this.idle.values()) for (const conn of list) destroy(conn);
    this.idle.clear();
  }

  private take(key: string): Conn | undefined {
    const list = this.idle.get(key);
    let conn = list?.pop();
    while (conn && (conn.destroyed || !conn.socket)) conn = list!.pop();
    if (list && list.length === 0) this.idle.delete(key);
    if (conn) conn.socket!.timeout(0);
    return conn;
  }

  release(conn: Conn): void {
    const list = this.idle.get(conn.key) ?? [];
    if (list.length >= this.maxIdlePerKey) return destroy(conn);
    conn.socket!.timeout(IDLE_SECONDS);
    list.push(conn);
    this.idle.set(conn.key, list);
  }

  forget(conn: Conn): void {
    const list = this.idle.get(conn.key);
    const i = list?.indexOf(conn) ?? -1;
    if (i >= 0) list!.splice(i, 1);
  }

  private connect(key: string, address: string, port: number, exchange: Exchange): Conn {
    const conn: Conn = { key, pool: this, socket: null, exchange, pending: null, input: EMPTY, head: null, snippet: [], snippetBytes: 0, destroyed: false };
    Bun.connect<Conn>({ hostname: address, port, data: conn, socket: handlers }).catch((e) => fail(conn, e));
    return conn;
  }
}

const EMPTY = Buffer.alloc(0);

function start(conn: Conn, exchange: Exchange): void {
  conn.exchange = exchange;
  conn.head = null;
  conn.snippet = [];
  conn.snippetBytes = 0;
  write(conn, exchange.request);
}

function write(conn: Conn, bytes: Buffer): void {
  const written = conn.socket!.write(bytes);
  conn.pending = written < bytes.length ? bytes.subarray(Math.max(0, written)) : null;
}

const handlers: SocketHandler<Conn> = {
  open(socket) {
    const conn = socket.data;
    conn.socket = socket;
    if (conn.destroyed) return socket.terminate();
    socket.setNoDelay(true);
    write(conn, conn.exchange!.request);
  },
  drain(socket) {
    const conn = socket.data;
    if (conn.pending) write(conn, conn.pending);
  },
  data(socket, chunk) {
    const conn = socket.data;
    if (!conn.exchange) return destroy(conn); // bytes nobody asked for: the connection is not trustworthy
    conn.exchange.gotBytes = true;
    conn.input = conn.input.length === 0 ? chunk : Buffer.concat([conn.input, chunk]);
    try {
      parse(conn);
    } catch (e) {
      fail(conn, e);
    }
  },
  end(socket) {
    closed(socket.data, null);
  },
  close(socket, error) {
    closed(socket.data, error ?? null);
  },
  error(socket, error) {
    closed(socket.data, error);
  },
  connectError(socket, error) {
    fail(socket.data, error);
  },
  timeout(socket) {
    destroy(socket.data); // idle for IDLE_SECONDS in the pool
  },
};

/** The connection ended: the answer if it was read to the close, a retry or an error if it was cut short. */
function closed(conn: Conn, error: Error | null): void {
  const exchange = conn.exchange;
  if (exchange && conn.head?.body.kind === "close" && !error) {
    finish(conn, false);
  } else if (exchange && !exchange.gotBytes && exchange.retry && !exchange.ended) {
    const retry = exchange.retry;
    exchange.retry = null;
    conn.exchange = null;
    destroy(conn);
    retry();
    return;
  } else if (exchange) {
    fail(conn, error ?? Object.assign(new Error("connection closed before the response ended"), { code: "ECONNRESET" }));
    return;
  }
  destroy(conn);
}

function fail(conn: Conn, error: unknown): void {
  const exchange = conn.exchange;
  conn.exchange = null;
  destroy(conn);
  if (exchange && !exchange.ended) {
    exchange.ended = true;
    exchange.onError(error);
  }
}

function destroy(conn: Conn): void {
  if (conn.destroyed) return;
  conn.destroyed = true;
  conn.pool.forget(conn);
  conn.socket?.terminate();
}

/** Answers the exchange; the connection goes back to the pool only after a complete, reusable response. */
function finish(conn: Conn, reusable: boolean): void {
  const exchange = conn.exchange!;
  const head = conn.head!;
  conn.exchange = null;
  const bodySnippet = Buffer.concat(conn.snippet).subarray(0, SNIPPET_BYTES).toString("utf8");
  if (reusable && conn.input.length === 0 && conn.pending === null && !exchange.ended) conn.pool.release(conn);
  else destroy(conn);
  if (exchange.ended) return;
  exchange.ended = true;
  exchange.onDone({ status: head.status, retryAfter: head.retryAfter, bodySnippet });
}

function parse(conn: Conn): void {
  while (conn.exchange) {
    if (!conn.head) {
      const end = conn.input.indexOf(CRLF2);
      if (end < 0) {
        if (conn.input.length > MAX_HEAD_BYTES) throw new Error("response head too large");
        return;
      }
      const head = parseHead(conn.input.subarray(0, end).toString("latin1"));
      conn.input = conn.input.subarray(end + 4);
      if (head.status < 200) {
        if (head.status === 101) throw new Error("unexpected protocol switch");
        continue; // 100 Continue, 103 Early Hints: the final answer follows
      }
      conn.head = head;
    }
    readBody(conn);
    return;
  }
}

function parseHead(text: string): NonNullable<Conn["head"]> {
  const lines = text.split("\r\n");
  const m = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]!);
  if (!m) throw new Error("malformed response status line");
  const status = Number(m[2]);
  let length: number | null = null;
  let chunked = false;
  let connection = "";
  let retryAfter: string | null = null;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-length") {
      if (!/^\d+$/.test(value) || (length !== null && length !== Number(value))) throw new Error("malformed content-length");
      length = Number(value);
    } else if (name === "transfer-encoding") chunked = value.toLowerCase().split(",").map((s) => s.trim()).includes("chunked");
    else if (name === "connection") connection += `${value.toLowerCase()},`;
    else if (name === "retry-after") retryAfter = value;
  }
  const body: Body =
    status === 204 || status === 304 ? { kind: "none" }
    : chunked ? { kind: "chunked", left: 0, state: "size" }
    : length !== null ? { kind: "length", left: length }
    : { kind: "close" };
  const keepAlive = body.kind !== "close" && (m[1] === "1" ? !connection.includes("close") : connection.includes("keep-alive"));
  return { status, retryAfter, keepAlive, body };
}

/** Keeps at most 1 KiB of the body; true when more than that arrived (the connection is then dropped). */
function keep(conn: Conn, bytes: Buffer): boolean {
  if (conn.snippetBytes <= SNIPPET_BYTES && bytes.length > 0) conn.snippet.push(bytes);
  conn.snippetBytes += bytes.length;
  return conn.snippetBytes > SNIPPET_BYTES;
}

function readBody(conn: Conn): void {
  const head = conn.head!;
  const body = head.body;
  if (body.kind === "none") return finish(conn, head.keepAlive);
  if (body.kind === "close") {
    if (keep(conn, conn.input)) finish(conn, false);
    conn.input = EMPTY;
    return;
  }
  if (body.kind === "length") {
    const take = conn.input.subarray(0, body.left);
    conn.input = conn.input.subarray(take.length);
    body.left -= take.length;
    if (keep(conn, take)) return finish(conn, false);
    if (body.left === 0) finish(conn, head.keepAlive);
    return;
  }
  readChunked(conn, body);
}

function readChunked(conn: Conn, body: Extract<Body, { kind: "chunked" }>): void {
  for (;;) {
    if (body.state === "data") {
      const take = conn.input.subarray(0, body.left);
      conn.input = conn.input.subarray(take.length);
      body.left -= take.length;
      if (keep(conn, take)) return finish(conn, false);
      if (body.left > 0) return;
      body.state = "data-end";
    }
    const eol = conn.input.indexOf("\r\n");
    if (eol < 0) {
      if (conn.input.length > MAX_HEAD_BYTES) throw new Error("malformed chunked body");
      return;
    }
    const line = conn.input.subarray(0, eol).toString("latin1");
    conn.input = conn.input.subarray(eol + 2);
    if (body.state === "data-end") {
      if (line !== "") throw new Error("malformed chunked body");
      body.state = "size";
    } else if (body.state === "size") {
      const size = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(line);
      if (!size) throw new Error("malformed chunk size");
      body.left = parseInt(size[1]!, 16);
      body.state = body.left === 0 ? "trailers" : "data";
    } else if (line === "") {
      return finish(conn, conn.head!.keepAlive); // the blank line after the trailers ends the body
    }
  }
}

type Origin = { path: string; host: string; port: number };
const origins = new Map<string, Origin>();
const MAX_REMEMBERED = 10_000;

/** Path, Host header and port of a URL; remembered, because one listener's URL is parsed for every delivery. */
function originOf(url: string): Origin {
  let origin = origins.get(url);
  if (origin) return origin;
  const u = new URL(url);
  origin = { path: `${u.pathname}${u.search}`, host: u.host, port: Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
  if (origins.size >= MAX_REMEMBERED) origins.clear();
  origins.set(url, origin);
  return origin;
}

/** The request as HTTP/1.1 bytes; a header that could split the message throws, as node:http's would. */
function encode(req: SendRequest, origin: Origin): Buffer {
  const method = req.method ?? "POST";
  let head = `${method} ${origin.path} HTTP/1.1\r\nhost: ${origin.host}\r\n`;
  for (const [name, value] of Object.entries(headersExcept(req.headers, ["content-length", "host", "connection", "transfer-encoding"]))) {
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new TypeError(`invalid header: ${JSON.stringify(name)}`);
    head += `${name}: ${value}\r\n`;
  }
  if (method !== "POST") return Buffer.from(`${head}\r\n`, "latin1");
  const body = Buffer.from(req.body, "utf8");
  return Buffer.concat([Buffer.from(`${head}content-length: ${body.length}\r\n\r\n`, "latin1"), body]);
}

/** One request to the checked address, on the pool's connection for this listener (agentKey) and address. */
export function socketRequest(
  req: SendRequest,
  target: Extract<Target, { ok: true }>,
  pool: SocketPool,
  onDone: (r: ResponseHead) => void,
  onError: (e: unknown) => void,
): { destroy(): void } {
  const origin = originOf(req.url);
  const message = encode(req, origin);
  return pool.request(`${req.agentKey ?? ""}|${target.address}|${origin.port}`, target.address, origin.port, message, onDone, onError);
}
