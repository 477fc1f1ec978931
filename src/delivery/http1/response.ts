/**
 * Reads one HTTP/1.1 answer from the bytes of a connection, as they arrive: interim 1xx answers skipped, then the
 * head, then the body, framed as RFC 9112 §6.3 says for a response:
 * - 1xx, 204 and 304 have no body;
 * - a Transfer-Encoding whose final coding is `chunked` frames it in chunks, and overrides any Content-Length;
 *   any other Transfer-Encoding means the body runs until the close;
 * - otherwise a Content-Length (one value, repeated identically at most) gives its length;
 * - otherwise the body runs until the close.
 * Listeners are untrusted, so anything ambiguous is an error or ends the connection after the answer, never a
 * guess that could take the next answer's bytes for this one's: a Content-Length beside a Transfer-Encoding, or a
 * Transfer-Encoding from an HTTP/1.0 server, closes the connection; conflicting or unusable lengths, a status line
 * that is not HTTP/1.x, a header that is not `name: value`, a bare CR or LF in a head, and chunk sizes past 2^53
 * are errors. At most SNIPPET_BYTES of the body are kept: a longer body ends the reading there (the connection is
 * then not reused). A head, or the trailers, over MAX_HEAD_BYTES is an error.
 */

/** What a send reports of an answer. */
export type ResponseHead = { status: number; retryAfter: string | null; bodySnippet: string };
/** The answer, and whether its connection may carry the next request. */
export type Answer = ResponseHead & { reusable: boolean };

/** The most of an answer's body that is read. */
export const SNIPPET_BYTES = 1024;
export const MAX_HEAD_BYTES = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");
const CR = 13;
const LF = 10;
const EMPTY = Buffer.alloc(0);

type Body =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; left: number; state: "size" | "data" | "data-end" | "trailers"; trailerBytes: number }
  | { kind: "close" };
type Head = { status: number; retryAfter: string | null; keepAlive: boolean; body: Body };

export class ResponseReader {
  private input: Buffer = EMPTY;
  /** How much of `input` the head search has looked at, so a head sent a byte at a time is scanned once. */
  private scanned = 0;
  private head: Head | null = null;
  private snippet: Buffer[] = [];
  private snippetBytes = 0;
  private done = false;

  /** The answer once `chunk` completes it; null while more is needed. Throws on a malformed answer. */
  push(chunk: Buffer): Answer | null {
    if (this.done) return null;
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    while (!this.head) {
      const end = this.input.indexOf(CRLF2, Math.max(0, this.scanned - 3));
      if (end < 0) {
        // A head ended by bare LFs never shows CRLF CRLF: refused now rather than waited on until the timeout.
        checkLineEnds(this.input, Math.max(0, this.scanned - 1));
        if (this.input.length > MAX_HEAD_BYTES) throw new Error("response head too large");
        this.scanned = this.input.length;
        return null;
      }
      if (end > MAX_HEAD_BYTES) throw new Error("response head too large");
      const head = parseHead(this.input.subarray(0, end).toString("latin1"));
      this.input = this.input.subarray(end + 4);
      this.scanned = 0;
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
      if (body.state === "data-end") {
        // The CRLF after a chunk's data is checked as it arrives: anything else means the size lied.
        if (this.input.length > 0 && this.input[0] !== CR) throw new Error("malformed chunked body");
        if (this.input.length > 1 && this.input[1] !== LF) throw new Error("malformed chunked body");
        if (this.input.length < 2) return null;
        this.input = this.input.subarray(2);
        body.state = "size";
      }
      const eol = this.input.indexOf("\r\n");
      if (eol < 0) {
        if (this.input.length > MAX_HEAD_BYTES) throw new Error("malformed chunked body");
        return null;
      }
      const line = this.input.subarray(0, eol).toString("latin1");
      this.input = this.input.subarray(eol + 2);
      if (body.state === "size") {
        body.left = chunkSize(line);
        body.state = body.left === 0 ? "trailers" : "data";
      } else if (line === "") {
        return this.finish(head.keepAlive); // the blank line after the trailers ends the body
      } else if ((body.trailerBytes += line.length + 2) > MAX_HEAD_BYTES) {
        throw new Error("response trailers too large");
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

/**
 * Lines of a head end in CRLF. A lone CR or LF is refused rather than read one way here and another by the server
 * (RFC 9112 §2.2 allows either). `from` is where the previous look stopped, less the byte a CR waits after.
 */
function checkLineEnds(input: Buffer, from: number): void {
  for (let i = input.indexOf(CR, from); i >= 0; i = input.indexOf(CR, i + 1)) {
    if (i + 1 < input.length && input[i + 1] !== LF) throw new Error("malformed response head: bare CR");
  }
  for (let i = input.indexOf(LF, from); i >= 0; i = input.indexOf(LF, i + 1)) {
    if (i === 0 || input[i - 1] !== CR) throw new Error("malformed response head: bare LF");
  }
}

const BARE_CR_OR_LF = /\r(?!\n)|(?<!\r)\n/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const DIGITS = /^\d+$/;

/** Without the spaces and tabs around it (String#trim would strip other characters too). */
function trimOws(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && (s.charCodeAt(start) === 32 || s.charCodeAt(start) === 9)) start++;
  while (end > start && (s.charCodeAt(end - 1) === 32 || s.charCodeAt(end - 1) === 9)) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

/** A list-valued field's elements, lowercased, empty ones dropped (RFC 9110 §5.6.1). */
const elements = (values: string[] | undefined): string[] => !values ? [] :
  values.flatMap((v) => v.split(",")).map((e) => trimOws(e).toLowerCase()).filter((e) => e !== "");

/** A head without its blank line: the status, and how its body is framed (the file's opening comment). */
function parseHead(text: string): Head {
  const bare = BARE_CR_OR_LF.exec(text);
  if (bare) throw new Error(`malformed response head: bare ${bare[0] === "\r" ? "CR" : "LF"}`);
  const lines = text.split("\r\n");
  const m = /^HTTP\/1\.(\d) ([1-9]\d\d)(?: |$)/.exec(lines[0]!);
  if (!m) throw new Error("malformed response status line");
  const http10 = m[1] === "0";
  const status = Number(m[2]);
  const fields = headerFields(lines);
  const { te, cl } = fields;
  const length = cl ? contentLength(cl) : null;
  const connection = elements(fields.connection);
  const retryAfter = fields.retryAfter?.at(-1) ?? null;
  let body: Body;
  // Framing the server may have meant differently from us: read this answer, then drop the connection.
  let suspect = false;
  if (status < 200 || status === 204 || status === 304) {
    body = { kind: "none" };
    suspect = te !== undefined || (length ?? 0) > 0;
  } else if (te) {
    const codings = elements(te);
    if (codings.filter((c) => c === "chunked").length > 1) throw new Error("malformed transfer-encoding");
    body = codings.at(-1) === "chunked" ? { kind: "chunked", left: 0, state: "size", trailerBytes: 0 } : { kind: "close" };
    suspect = cl !== undefined || http10;
  } else {
    body = length !== null ? { kind: "length", left: length } : { kind: "close" };
  }
  const persistent = !connection.includes("close") && (!http10 || connection.includes("keep-alive"));
  return { status, retryAfter, keepAlive: persistent && !suspect && body.kind !== "close", body };
}

/** The fields that framing, reuse and retries depend on; the others are only checked to be `name: value`. */
type Fields = { te?: string[]; cl?: string[]; connection?: string[]; retryAfter?: string[] };

/** Kept fields, each with its values in order; an obs-fold line joins the value above with SP. */
function headerFields(lines: string[]): Fields {
  const fields: Fields = {};
  let last: string[] | null | undefined; // the values of the field above; null when it is not kept
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line[0] === " " || line[0] === "\t") {
      if (last === undefined) throw new Error("malformed response header");
      if (last) last[last.length - 1] = trimOws(`${last[last.length - 1]} ${trimOws(line)}`);
      continue;
    }
    const colon = line.indexOf(":");
    const name = line.slice(0, colon);
    if (colon <= 0 || !TOKEN.test(name)) throw new Error("malformed response header");
    const field = keptField(name);
    if (!field) {
      last = null;
      continue;
    }
    last = fields[field] ??= [];
    last.push(trimOws(line.slice(colon + 1)));
  }
  return fields;
}

/** Which kept field `name` is, if any; most names are told apart by their length alone. */
function keptField(name: string): keyof Fields | null {
  const kept = KEPT_BY_LENGTH[name.length];
  return kept && name.toLowerCase() === kept[0] ? kept[1] : null;
}
const KEPT_BY_LENGTH: Record<number, [string, keyof Fields]> = {
  17: ["transfer-encoding", "te"], 14: ["content-length", "cl"], 10: ["connection", "connection"], 11: ["retry-after", "retryAfter"],
};

/** One length, however often repeated ("5, 5" is 5); anything else is an error, never a guess. */
function contentLength(values: string[]): number {
  const parts = values.length === 1 && !values[0]!.includes(",") ? values : values.flatMap((v) => v.split(",")).map(trimOws);
  const length = Number(parts[0]);
  if (!parts.every((p) => DIGITS.test(p) && Number(p) === length) || !Number.isSafeInteger(length)) {
    throw new Error("malformed content-length");
  }
  return length;
}
/** A chunk-size line's size (its extensions ignored); past 2^53 it could not be counted exactly, so an error. */
function chunkSize(line: string): number {
  const m = /^([0-9a-fA-F]+)[ \t]*(?:;.*)?$/.exec(line);
  const size = m ? parseInt(m[1]!, 16) : NaN;
  if (!Number.isSafeInteger(size)) throw new Error("malformed chunk size");
  return size;
}
