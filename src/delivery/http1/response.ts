/**
 * Reads one HTTP/1.1 answer from the bytes of a connection, as they arrive: interim 1xx answers skipped, then the
 * head, then a body framed by Content-Length, chunked encoding or the close. Listeners are untrusted, so at most
 * SNIPPET_BYTES of the body are kept and a longer body ends the reading there (the connection is then not
 * reusable), and a head over MAX_HEAD_BYTES is an error.
 */

/** What a send reports of an answer. */
export type ResponseHead = { status: number; retryAfter: string | null; bodySnippet: string };
/** The answer, and whether its connection may carry the next request. */
export type Answer = ResponseHead & { reusable: boolean };

/** The most of an answer's body that is read. */
export const SNIPPET_BYTES = 1024;
const MAX_HEAD_BYTES = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");
const EMPTY = Buffer.alloc(0);

type Body =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; left: number; state: "size" | "data" | "data-end" | "trailers" }
  | { kind: "close" };
type Head = { status: number; retryAfter: string | null; keepAlive: boolean; body: Body };

export class ResponseReader {
  private input: Buffer = EMPTY;
  private head: Head | null = null;
  private snippet: Buffer[] = [];
  private snippetBytes = 0;
  private done = false;

  /** The answer once `chunk` completes it; null while more is needed. Throws on a malformed answer. */
  push(chunk: Buffer): Answer | null {
    if (this.done) return null;
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    while (!this.head) {
      const end = this.input.indexOf(CRLF2);
      if (end < 0) {
        if (this.input.length > MAX_HEAD_BYTES) throw new Error("response head too large");
        return null;
      }
      const head = parseHead(this.input.subarray(0, end).toString("latin1"));
      this.input = this.input.subarray(end + 4);
      if (head.status === 101) throw new Error("unexpected protocol switch");
      if (head.status >= 200) this.head = head; // 100 Continue, 103 Early Hints: the final answer follows
    }
    return this.readBody(this.head, this.head.body);
  }

  /** The answer when the connection closed: complete only for a body that runs until the close. */
  closed(): Answer | null {
    return !this.done && this.head?.body.kind === "close" ? this.finish(false) : null;
  }

  private readBody(head: Head, body: Body): Answer | null {
    if (body.kind === "none") return this.finish(head.keepAlive);
    if (body.kind === "close") {
      const over = this.keep(this.input);
      this.input = EMPTY;
      return over ? this.finish(false) : null;
    }
    if (body.kind === "length") {
      const take = this.take(body.left);
      body.left -= take.length;
      if (this.keep(take)) return this.finish(false);
      return body.left === 0 ? this.finish(head.keepAlive) : null;
    }
    return this.readChunked(head, body);
  }

  private readChunked(head: Head, body: Extract<Body, { kind: "chunked" }>): Answer | null {
    for (;;) {
      if (body.state === "data") {
        const take = this.take(body.left);
        body.left -= take.length;
        if (this.keep(take)) return this.finish(false);
        if (body.left > 0) return null;
        body.state = "data-end";
      }
      const eol = this.input.indexOf("\r\n");
      if (eol < 0) {
        if (this.input.length > MAX_HEAD_BYTES) throw new Error("malformed chunked body");
        return null;
      }
      const line = this.input.subarray(0, eol).toString("latin1");
      this.input = this.input.subarray(eol + 2);
      if (body.state === "data-end") {
        if (line !== "") throw new Error("malformed chunked body");
        body.state = "size";
      } else if (body.state === "size") {
        const size = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(line);
        if (!size) throw new Error("malformed chunk size");
        body.left = parseInt(size[1]!, 16);
        body.state = body.left === 0 ? "trailers" : "data";
      } else if (line === "") {
        return this.finish(head.keepAlive); // the blank line after the trailers ends the body
      }
    }
  }

  private take(n: number): Buffer {
    const taken = this.input.subarray(0, n);
    this.input = this.input.subarray(taken.length);
    return taken;
  }

  /** Keeps at most SNIPPET_BYTES of the body; true when more than that arrived. */
  private keep(bytes: Buffer): boolean {
    if (this.snippetBytes <= SNIPPET_BYTES && bytes.length > 0) this.snippet.push(bytes);
    this.snippetBytes += bytes.length;
    return this.snippetBytes > SNIPPET_BYTES;
  }

  /** Bytes past the answer mean the server said more than it was asked: its connection is not reused. */
  private finish(keepAlive: boolean): Answer {
    this.done = true;
    const { status, retryAfter } = this.head!;
    const bodySnippet = Buffer.concat(this.snippet).subarray(0, SNIPPET_BYTES).toString("utf8");
    return { status, retryAfter, bodySnippet, reusable: keepAlive && this.input.length === 0 };
  }
}

function parseHead(text: string): Head {
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
