/**
 * The HTTP client of every delivery and liveness request: HTTP/1.1 written, and its answer read, on a
 * Bun.connect socket on the worker's own event loop, over TCP or TLS. Bun's fetch hands each request to its
 * HTTP client thread and back, at several times the CPU per request, on a thread that competes for the cores
 * with the API thread; node:https costs more still (figures: docs/performance.md). No library fills this in Bun
 * (undici is its fetch), so this file is the smallest client the delivery contract needs:
 * - the socket goes to the checked address only (the SSRF pin); the Host header keeps the URL's name and port;
 *   over TLS the certificate must be valid for the URL's name (or literal address), checked in the handshake
 *   before a byte of the request is written;
 * - one request per connection at a time; idle connections are kept per key (a listener) for IDLE_SECONDS,
 *   under the 5 s keep-alive of common servers, so the server rarely closes one as it is reused, and at most
 *   PoolLimits of them, per key and in all (the least recently used closed first). A reused
 *   connection that closes before any byte of the answer is retried once on a new one: the request may have
 *   arrived twice, which at-least-once delivery allows (receivers deduplicate by webhook-id);
 * - answers are read by response.ts; one past 1 KiB of body, with bytes after it, or framed ambiguously (for
 *   example Content-Length beside Transfer-Encoding) drops its connection;
 *   redirects are answers like any other;
 * - errors keep their codes (ECONNREFUSED, ECONNRESET, TLS codes) for egress.ts to describe; `destroy()` is the
 *   watchdog's.
 */
import type { Socket, SocketHandler } from "bun";
import type { SendRequest, Target } from "../egress.ts";
import { ResponseReader, type Answer, type ResponseHead } from "./response.ts";
import { encode, originOf } from "./request.ts";

const IDLE_SECONDS = 4;

type Exchange = {
  onDone: (r: ResponseHead) => void;
  onError: (e: unknown) => void;
  request: Buffer;
  reader: ResponseReader;
  /** Retry once on a new connection if this one closes before answering (it was reused, maybe stale); its
   * reader is still empty then, so the new connection reads with it. */
  retry: (() => void) | null;
  gotBytes: boolean;
  ended: boolean;
};

/** TLS of a connection: the name the certificate must carry (also sent as SNI); `insecure` and `ca` are for tests. */
export type TlsTarget = { serverName: string; insecure: boolean; ca?: string };

type PooledSocket = {
  key: string;
  tls: TlsTarget | null;
  pool: SocketPool;
  socket: Socket<PooledSocket> | null;
  exchange: Exchange | null;
  pending: Buffer | null; // request bytes the socket did not take yet
  destroyed: boolean;
};

/** How many idle connections a pool keeps: per key (a listener, at one address), and in all. */
export type PoolLimits = { maxIdlePerKey: number; maxIdle: number };

/**
 * Idle keep-alive connections per key; one per request in flight, returned after a complete answer. The bound in
 * all matters as much as the one per key: keys follow listeners and their DNS answers, so without it the idle
 * sockets (a file descriptor each, and TLS buffers) would grow with the number of listeners. Over it, the least
 * recently used idle connection is closed.
 */
export class SocketPool {
  private readonly idle = new Map<string, PooledSocket[]>();
  /** Every idle connection, least recently used first (a Set iterates in insertion order). */
  private readonly lru = new Set<PooledSocket>();

  constructor(private readonly limits: PoolLimits = { maxIdlePerKey: 16, maxIdle: 256 }) {}

  /** Idle connections kept, in all. */
  get idleCount(): number {
    return this.lru.size;
  }

  /** Sends `request` (the whole HTTP/1.1 message) to address:port on a connection kept under `key`. */
  request(key: string, address: string, port: number, tls: TlsTarget | null, request: Buffer, onDone: Exchange["onDone"], onError: Exchange["onError"]): { destroy(): void } {
    let conn: PooledSocket | undefined;
    const exchange: Exchange = { onDone, onError, request, reader: new ResponseReader(), retry: null, gotBytes: false, ended: false };
    const fresh = () => {
      conn = this.connect(key, address, port, tls, exchange);
    };
    const reused = this.take(key);
    if (reused) {
      exchange.retry = fresh;
      conn = reused;
      reused.exchange = exchange;
      write(reused, request);
    } else fresh();
    return {
      destroy: () => {
        exchange.ended = true;
        if (conn) destroy(conn);
      },
    };
  }

  /** Closes every idle connection (shutdown). Connections in use close when their exchange ends. */
  destroy(): void {
    // destroy() takes each connection out of the lists: iterate over a copy.
    for (const conn of [...this.lru]) destroy(conn);
    this.idle.clear();
  }

  private take(key: string): PooledSocket | undefined {
    const list = this.idle.get(key);
    let conn = list?.pop();
    while (conn && (conn.destroyed || !conn.socket)) conn = list!.pop();
    if (list && list.length === 0) this.idle.delete(key);
    if (!conn) return undefined;
    this.lru.delete(conn);
    conn.socket!.timeout(0);
    return conn;
  }

  release(conn: PooledSocket): void {
    const list = this.idle.get(conn.key) ?? [];
    if (list.length >= this.limits.maxIdlePerKey) return destroy(conn);
    conn.socket!.timeout(IDLE_SECONDS);
    list.push(conn);
    this.idle.set(conn.key, list);
    this.lru.add(conn);
    if (this.lru.size > this.limits.maxIdle) destroy(this.lru.values().next().value!);
  }

  forget(conn: PooledSocket): void {
    this.lru.delete(conn);
    const list = this.idle.get(conn.key);
    const i = list?.indexOf(conn) ?? -1;
    if (i >= 0) list!.splice(i, 1);
    if (list?.length === 0) this.idle.delete(conn.key); // keys follow DNS answers: empty ones must not pile up
  }

  private connect(key: string, address: string, port: number, tls: TlsTarget | null, exchange: Exchange): PooledSocket {
    const conn: PooledSocket = { key, tls, pool: this, socket: null, exchange, pending: null, destroyed: false };
    // The certificate is checked against the URL's name (or literal address) while the socket goes to the checked
    // address; the handshake handler refuses a failed check before a byte of the request is written.
    const options = tls ? { tls: { serverName: tls.serverName, rejectUnauthorized: !tls.insecure, ...(tls.ca ? { ca: tls.ca } : {}) } } : {};
    Bun.connect<PooledSocket>({ hostname: address, port, data: conn, socket: handlers, ...options }).catch((e) => fail(conn, e));
    return conn;
  }
}

function write(conn: PooledSocket, bytes: Buffer): void {
  const written = conn.socket!.write(bytes);
  conn.pending = written < bytes.length ? bytes.subarray(Math.max(0, written)) : null;
}

const handlers: SocketHandler<PooledSocket> = {
  open(socket) {
    const conn = socket.data;
    conn.socket = socket;
    if (conn.destroyed) return socket.terminate();
    socket.setNoDelay(true);
    if (!conn.tls) write(conn, conn.exchange!.request); // over TLS, only once the certificate has passed
  },
  handshake(socket, success, authorizationError) {
    const conn = socket.data;
    conn.socket = socket;
    if (conn.destroyed || !conn.exchange) return;
    if (!conn.tls!.insecure && (!success || authorizationError)) {
      const reason = authorizationError ?? new Error("certificate not trusted");
      return fail(conn, Object.assign(reason, { code: (reason as { code?: string }).code ?? "ERR_TLS_CERT" }));
    }
    write(conn, conn.exchange.request);
  },
  drain(socket) {
    const conn = socket.data;
    if (conn.pending) write(conn, conn.pending);
  },
  data(socket, chunk) {
    const conn = socket.data;
    const exchange = conn.exchange;
    if (!exchange) return destroy(conn); // bytes nobody asked for: the connection is not trustworthy
    exchange.gotBytes = true;
    try {
      const answer = exchange.reader.push(chunk);
      if (answer) finish(conn, answer);
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
function closed(conn: PooledSocket, error: Error | null): void {
  const exchange = conn.exchange;
  const answer = exchange && !error ? exchange.reader.closed() : null;
  if (answer) return finish(conn, answer);
  if (exchange && !exchange.gotBytes && exchange.retry && !exchange.ended) {
    const retry = exchange.retry;
    exchange.retry = null;
    conn.exchange = null;
    destroy(conn);
    return retry();
  }
  if (exchange) return fail(conn, error ?? Object.assign(new Error("connection closed before the response ended"), { code: "ECONNRESET" }));
  destroy(conn);
}

function fail(conn: PooledSocket, error: unknown): void {
  const exchange = conn.exchange;
  conn.exchange = null;
  destroy(conn);
  if (exchange && !exchange.ended) {
    exchange.ended = true;
    exchange.onError(error);
  }
}

function destroy(conn: PooledSocket): void {
  if (conn.destroyed) return;
  conn.destroyed = true;
  conn.pool.forget(conn);
  conn.socket?.terminate();
}

/** Answers the exchange; the connection goes back to the pool only after a complete, reusable answer. */
function finish(conn: PooledSocket, answer: Answer): void {
  const exchange = conn.exchange!;
  conn.exchange = null;
  if (answer.reusable && conn.pending === null && !exchange.ended) conn.pool.release(conn);
  else destroy(conn);
  if (exchange.ended) return;
  exchange.ended = true;
  exchange.onDone({ status: answer.status, retryAfter: answer.retryAfter, bodySnippet: answer.bodySnippet });
}

/** One request to the checked address, on the pool's connection for this listener (poolKey) and address. */
export function socketRequest(
  req: SendRequest,
  target: Extract<Target, { ok: true }>,
  pool: SocketPool,
  onDone: (r: ResponseHead) => void,
  onError: (e: unknown) => void,
): { destroy(): void } {
  const origin = originOf(req.url);
  const message = encode(req, origin);
  const tls = origin.secure ? { serverName: origin.name, insecure: req.insecureTls === true, ca: req.ca } : null;
  const key = `${req.poolKey ?? ""}|${target.address}|${origin.port}|${tls ? (tls.insecure ? "tls-insecure" : `tls:${tls.serverName}`) : "tcp"}`;
  return pool.request(key, target.address, origin.port, tls, message, onDone, onError);
}
