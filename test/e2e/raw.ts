/**
 * Raw clients for hostile-input tests. HTTP/1.1 writes its bytes to a TLS (or plain) socket as given, so no client
 * normalizes a header or refuses a request; HTTP/2 goes through node:http2 with whatever headers it lets through.
 * Every exchange says how it ended, so a test can tell an answer from a reset or an empty reply.
 */
import net from "node:net";
import tls from "node:tls";
import http2 from "node:http2";

/** `answered`: a status line (or :status) came; `closed`: the connection ended with no answer; `reset`: RST. */
export type Ending = "answered" | "closed" | "reset" | "timeout";
export type Outcome = { status: number; headers: Record<string, string>; text: string; ending: Ending };

/** How long a request may go unanswered before it counts as held. */
export const TIMEOUT_MS = 10_000;

type Pending = { head: boolean; resolve: (o: Outcome) => void; timer: ReturnType<typeof setTimeout> };

/** One keep-alive HTTP/1.1 connection, reopened after the server closes it; requests go one at a time. */
export class H1Connection {
  private socket: net.Socket | null = null;
  private buffer = Buffer.alloc(0);
  private pending: Pending | null = null;
  private failure: Ending = "closed";

  constructor(private readonly url: string) {}

  /** Sends `bytes` (a whole request, or anything else) and reads one answer; `head` answers carry no body. */
  async send(bytes: string | Uint8Array, head = false): Promise<Outcome> {
    const socket = await this.open();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.finish({ status: 0, headers: {}, text: "", ending: "timeout" }, true), TIMEOUT_MS);
      this.pending = { head, resolve, timer };
      socket.write(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): Promise<net.Socket> {
    if (this.socket && !this.socket.destroyed) return Promise.resolve(this.socket);
    const { protocol, hostname, port } = new URL(this.url);
    const secure = protocol === "https:";
    return new Promise((resolve, reject) => {
      const socket = secure
        ? tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] })
        : net.connect(Number(port), hostname);
      this.socket = socket;
      this.buffer = Buffer.alloc(0);
      this.failure = "closed";
      socket.once(secure ? "secureConnect" : "connect", () => resolve(socket));
      socket.on("data", (chunk: Buffer) => this.receive(chunk));
      socket.on("error", (error: NodeJS.ErrnoException) => {
        this.failure = error.code === "ECONNRESET" || error.code === "EPIPE" ? "reset" : "closed";
        if (!this.pending) reject(error);
      });
      socket.on("close", () => this.ended(socket));
    });
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const parsed = this.pending && parseResponse(this.buffer, this.pending.head, false);
    if (!parsed) return;
    this.buffer = this.buffer.subarray(parsed.used);
    this.finish(parsed.outcome, parsed.close);
  }

  private ended(socket: net.Socket): void {
    if (this.socket === socket) this.socket = null;
    if (!this.pending) return;
    const parsed = parseResponse(this.buffer, this.pending.head, true);
    this.finish(parsed?.outcome ?? { status: 0, headers: {}, text: "", ending: this.failure }, true);
  }

  private finish(outcome: Outcome, close: boolean): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    clearTimeout(pending.timer);
    if (close) this.close();
    pending.resolve(outcome);
  }
}

/** One answer from the start of `data`, or null while it is incomplete (`eof`: the connection has ended). */
type Parsed = { outcome: Outcome; close: boolean; used: number };

function parseResponse(data: Buffer, head: boolean, eof: boolean): Parsed | null {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = data.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const close = headers.connection?.toLowerCase() === "close";
  const rest = data.subarray(end + 4);
  let body: { bytes: Buffer; used: number } | null;
  if (head || status === 204 || status === 304) body = { bytes: Buffer.alloc(0), used: 0 };
  else if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    body = rest.length >= length ? { bytes: rest.subarray(0, length), used: length } : null;
  } else if (headers["transfer-encoding"]?.toLowerCase() === "chunked") body = dechunk(rest);
  else body = eof ? { bytes: rest, used: rest.length } : null; // no length: the body runs to the end of the connection
  if (!body) return eof ? { outcome: { status, headers, text: rest.toString("utf8"), ending: "answered" }, close: true, used: data.length } : null;
  return { outcome: { status, headers, text: body.bytes.toString("utf8"), ending: "answered" }, close, used: end + 4 + body.used };
}

function dechunk(data: Buffer): { bytes: Buffer; used: number } | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const line = data.indexOf("\r\n", at);
    if (line < 0) return null;
    const size = parseInt(data.subarray(at, line).toString("latin1"), 16);
    if (size === 0) return data.length >= line + 4 ? { bytes: Buffer.concat(parts), used: line + 4 } : null;
    if (data.length < line + 2 + size + 2) return null;
    parts.push(data.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
}

/** Plain-text request bytes: the request line, the headers as given, then the body. */
export function requestBytes(method: string, target: string, headers: [string, string][], body?: string | Uint8Array): Buffer {
  const head = `${method} ${target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
  const bodyBytes = body === undefined ? Buffer.alloc(0) : typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  return Buffer.concat([Buffer.from(head, "latin1"), bodyBytes]);
}

/** An HTTP/2 session, reopened after the server ends it; `refused` when node:http2 will not send the headers. */
export class H2Client {
  private session: http2.ClientHttp2Session | null = null;

  constructor(private readonly url: string) {}

  send(headers: Record<string, string>, body?: string | Uint8Array): Promise<Outcome | "refused"> {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = http2.connect(this.url, { rejectUnauthorized: false, maxSendHeaderBlockLength: 1 << 20 } as http2.SecureClientSessionOptions);
      this.session.on("error", () => (this.session = null));
    }
    let stream: http2.ClientHttp2Stream;
    try {
      stream = this.session.request(headers);
    } catch {
      return Promise.resolve("refused"); // node:http2 refuses the header names or values; nothing was sent
    }
    return new Promise((resolve) => {
      let status = 0;
      let responseHeaders: Record<string, string> = {};
      const chunks: Buffer[] = [];
      const done = (ending: Ending) => {
        clearTimeout(timer);
        resolve({ status, headers: responseHeaders, text: Buffer.concat(chunks).toString("utf8"), ending: status ? "answered" : ending });
      };
      const timer = setTimeout(() => (stream.close(http2.constants.NGHTTP2_CANCEL), done("timeout")), TIMEOUT_MS);
      stream.on("response", (h) => {
        status = Number(h[":status"]);
        responseHeaders = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(":")).map(([k, v]) => [k, String(v)]));
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => done("closed"));
      stream.on("error", () => done("reset"));
      stream.on("close", () => done(stream.rstCode ? "reset" : "closed"));
      stream.end(body === undefined ? undefined : typeof body === "string" ? Buffer.from(body, "utf8") : body);
    });
  }

  close(): void {
    this.session?.destroy();
    this.session = null;
  }
}
