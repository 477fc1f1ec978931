// The response reader, row by row: raw bytes in, and the answer (status, snippet, whether the connection is
// reused), or the error, or nothing even at the close. Each row is read whole, and again a byte at a time.
import { describe, expect, test } from "bun:test";
import { MAX_HEAD_BYTES, ResponseReader, SNIPPET_BYTES, type Answer } from "./response";

type Outcome =
  | { answer: Partial<Answer>; atClose?: boolean }
  | { error: string }
  | { none: true };
type Row = [name: string, raw: string, expected: Outcome, options?: { whole?: boolean }];

const ok = (status: number, bodySnippet: string, reusable: boolean): Outcome => ({ answer: { status, bodySnippet, reusable } });
const atClose = (status: number, bodySnippet: string): Outcome => ({ answer: { status, bodySnippet, reusable: false }, atClose: true });
const error = (text: string): Outcome => ({ error: text });
const none: Outcome = { none: true };

const head = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;
const big = (n: number) => "x".repeat(n);

const framing: Row[] = [
  ["Content-Length", head(["HTTP/1.1 200 OK", "Content-Length: 5"]) + "hello", ok(200, "hello", true)],
  ["Content-Length 0", head(["HTTP/1.1 202 Accepted", "Content-Length: 0"]), ok(202, "", true)],
  ["chunked with extensions and trailers", head(["HTTP/1.1 500 Oops", "Transfer-Encoding: chunked"]) + "5;a=b\r\nhello\r\n6 ; c\r\n world\r\n0\r\nX-T: 1\r\n\r\n", ok(500, "hello world", true)],
  ["chunk sizes in either case, with leading zeros", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "000A\r\n0123456789\r\n0\r\n\r\n", ok(200, "0123456789", true)],
  ["Content-Length beside chunked: read as chunked, connection closed", head(["HTTP/1.1 200 OK", "Content-Length: 3", "Transfer-Encoding: chunked"]) + "5\r\nhello\r\n0\r\n\r\n", ok(200, "hello", false)],
  ["chunked before Content-Length: the same", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Length: 300"]) + "2\r\nhi\r\n0\r\n\r\n", ok(200, "hi", false)],
  ["chunked last of several codings", head(["HTTP/1.1 200 OK", "Transfer-Encoding: gzip, chunked"]) + "2\r\nzz\r\n0\r\n\r\n", ok(200, "zz", true)],
  ["codings over two lines, chunked last", head(["HTTP/1.1 200 OK", "Transfer-Encoding: gzip", "Transfer-Encoding: Chunked "]) + "2\r\nzz\r\n0\r\n\r\n", ok(200, "zz", true)],
  ["codings folded (obs-fold), chunked last", head(["HTTP/1.1 200 OK", "Transfer-Encoding: gzip,", " chunked"]) + "2\r\nzz\r\n0\r\n\r\n", ok(200, "zz", true)],
  ["chunked not last: read until the close", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked, gzip"]) + "2\r\nzz\r\n0\r\n\r\n", atClose(200, "2\r\nzz\r\n0\r\n\r\n")],
  ["another coding only: read until the close", head(["HTTP/1.1 200 OK", "Transfer-Encoding: gzip", "Content-Length: 2"]) + "abc", atClose(200, "abc")],
  ["chunked twice", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked, chunked"]) + "0\r\n\r\n", error("malformed transfer-encoding")],
  ["no length: read until the close, never reused", head(["HTTP/1.1 200 OK", "Connection: keep-alive"]) + "until the end", atClose(200, "until the end")],
  ["a GET probe's answer has its body read", head(["HTTP/1.1 200 OK", "Content-Type: text/plain", "Content-Length: 2"]) + "up", ok(200, "up", true)],
  ["a body in UTF-8", head(["HTTP/1.1 400 Bad", "Content-Length: 3"]) + Buffer.from("hé", "utf8").toString("latin1"), ok(400, "hé", true)],
  ["Retry-After kept, the last one", head(["HTTP/1.1 429 Slow down", "Retry-After: 5", "retry-after: 7", "Content-Length: 0"]), { answer: { status: 429, retryAfter: "7", reusable: true } }],
];

const lengths: Row[] = [
  ["the same length twice", head(["HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 2"]) + "ok", ok(200, "ok", true)],
  ["the same length as a list", head(["HTTP/1.1 200 OK", "Content-Length: 2, 02"]) + "ok", ok(200, "ok", true)],
  ["two lengths", head(["HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 3"]) + "ok!", error("malformed content-length")],
  ["two lengths in a list", head(["HTTP/1.1 200 OK", "Content-Length: 2,3"]) + "ok!", error("malformed content-length")],
  ["a negative length", head(["HTTP/1.1 200 OK", "Content-Length: -1"]), error("malformed content-length")],
  ["a signed length", head(["HTTP/1.1 200 OK", "Content-Length: +2"]) + "ok", error("malformed content-length")],
  ["a hex length", head(["HTTP/1.1 200 OK", "Content-Length: 0x2"]) + "ok", error("malformed content-length")],
  ["an exponent", head(["HTTP/1.1 200 OK", "Content-Length: 1e1"]) + "ok", error("malformed content-length")],
  ["an empty length", head(["HTTP/1.1 200 OK", "Content-Length: "]), error("malformed content-length")],
  ["a length past 2^53", head(["HTTP/1.1 200 OK", "Content-Length: 9007199254740992"]), error("malformed content-length")],
  ["a length of 20 digits", head(["HTTP/1.1 200 OK", "Content-Length: 99999999999999999999"]), error("malformed content-length")],
  ["a malformed length beside chunked", head(["HTTP/1.1 200 OK", "Content-Length: x", "Transfer-Encoding: chunked"]) + "0\r\n\r\n", error("malformed content-length")],
  ["the largest length: cut after the snippet", head(["HTTP/1.1 200 OK", "Content-Length: 9007199254740991"]) + big(SNIPPET_BYTES + 1), ok(200, big(SNIPPET_BYTES), false)],
  ["a body past the snippet is cut, the connection dropped", head(["HTTP/1.1 200 OK", "Content-Length: 5000"]) + big(SNIPPET_BYTES + 1), ok(200, big(SNIPPET_BYTES), false)],
  ["a body of exactly the snippet is whole", head(["HTTP/1.1 200 OK", `Content-Length: ${SNIPPET_BYTES}`]) + big(SNIPPET_BYTES), ok(200, big(SNIPPET_BYTES), true)],
];

const chunks: Row[] = [
  ["a negative chunk size", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "-5\r\nhello\r\n0\r\n\r\n", error("malformed chunk size")],
  ["a 0x chunk size", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "0x5\r\nhello\r\n0\r\n\r\n", error("malformed chunk size")],
  ["a chunk size with a space before it", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + " 5\r\nhello\r\n0\r\n\r\n", error("malformed chunk size")],
  ["an empty chunk size", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "\r\nhello\r\n0\r\n\r\n", error("malformed chunk size")],
  ["a chunk size past 2^53", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "20000000000000\r\nhello", error("malformed chunk size")],
  ["a chunk size of 20 hex digits", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "ffffffffffffffffffff\r\n", error("malformed chunk size")],
  ["the largest chunk size: cut after the snippet", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "1fffffffffffff\r\n" + big(SNIPPET_BYTES + 1), ok(200, big(SNIPPET_BYTES), false)],
  ["a chunk longer than its size", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "3\r\nhello\r\n0\r\n\r\n", error("malformed chunked body")],
  ["a chunk without its CRLF", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "5\r\nhello\n0\r\n\r\n", error("malformed chunked body")],
  ["a chunk size line without end", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "5" + ";".repeat(MAX_HEAD_BYTES + 1), error("malformed chunked body")],
  ["trailers past the head bound", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "0\r\n" + `X: ${big(1000)}\r\n`.repeat(70), error("response trailers too large")],
  ["many small chunks past the snippet: cut", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "1\r\nx\r\n".repeat(SNIPPET_BYTES + 1), ok(200, big(SNIPPET_BYTES), false)],
];

const connection: Row[] = [
  ["Connection: close", head(["HTTP/1.1 200 OK", "Connection: close", "Content-Length: 0"]), ok(200, "", false)],
  ["Connection: Close, in a list", head(["HTTP/1.1 200 OK", "Connection: upgrade , CLOSE", "Content-Length: 0"]), ok(200, "", false)],
  ["Connection: close on a second line", head(["HTTP/1.1 200 OK", "Connection: te", "Connection: close", "Content-Length: 0"]), ok(200, "", false)],
  ["Connection: keep-alive-not-close is not close", head(["HTTP/1.1 200 OK", "Connection: keep-alive-not-close", "Content-Length: 0"]), ok(200, "", true)],
  ["Connection: closed is not close", head(["HTTP/1.1 200 OK", "Connection: closed", "Content-Length: 0"]), ok(200, "", true)],
  ["HTTP/1.0 without keep-alive", head(["HTTP/1.0 200 OK", "Content-Length: 0"]), ok(200, "", false)],
  ["HTTP/1.0 with keep-alive", head(["HTTP/1.0 200 OK", "Connection: Keep-Alive", "Content-Length: 0"]), ok(200, "", true)],
  ["HTTP/1.0 with keep-alive-x", head(["HTTP/1.0 200 OK", "Connection: keep-alive-x", "Content-Length: 0"]), ok(200, "", false)],
  ["HTTP/1.0 with keep-alive and close", head(["HTTP/1.0 200 OK", "Connection: keep-alive, close", "Content-Length: 0"]), ok(200, "", false)],
  ["HTTP/1.0 with Transfer-Encoding: read it, then close", head(["HTTP/1.0 200 OK", "Connection: keep-alive", "Transfer-Encoding: chunked"]) + "2\r\nhi\r\n0\r\n\r\n", ok(200, "hi", false)],
  ["a later HTTP/1.x reads as 1.1", head(["HTTP/1.2 200 OK", "Content-Length: 0"]), ok(200, "", true)],
  ["bytes after the answer", head(["HTTP/1.1 200 OK", "Content-Length: 2"]) + "okHTTP/1.1 200 OK\r\n\r\n", ok(200, "ok", false), { whole: true }],
];

const heads: Row[] = [
  ["no reason phrase", "HTTP/1.1 204\r\n\r\n", ok(204, "", true)],
  ["a four-digit status", head(["HTTP/1.1 2000 OK", "Content-Length: 0"]), error("malformed response status line")],
  ["a status below 100", head(["HTTP/1.1 099 Odd", "Content-Length: 0"]), error("malformed response status line")],
  ["HTTP/2 in an HTTP/1.1 status line", head(["HTTP/2 200", "Content-Length: 0"]), error("malformed response status line")],
  ["a lowercase protocol name", head(["http/1.1 200 OK", "Content-Length: 0"]), error("malformed response status line")],
  ["two spaces before the status", head(["HTTP/1.1  200 OK", "Content-Length: 0"]), error("malformed response status line")],
  ["not HTTP at all", "NOT HTTP\r\n\r\n", error("malformed response status line")],
  ["a space before a colon", head(["HTTP/1.1 200 OK", "Content-Length : 2"]) + "ok", error("malformed response header")],
  ["a header line without a colon", head(["HTTP/1.1 200 OK", "Content-Length 2"]) + "ok", error("malformed response header")],
  ["a header without a name", head(["HTTP/1.1 200 OK", ": 2"]), error("malformed response header")],
  ["obs-fold on the first header line", head(["HTTP/1.1 200 OK", " Content-Length: 2"]) + "ok", error("malformed response header")],
  ["obs-fold joins the header above", head(["HTTP/1.1 200 OK", "X-A: 1", "\tmore", "Content-Length: 2"]) + "ok", ok(200, "ok", true)],
  ["lines ending in a bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", error("bare LF")],
  ["one bare LF among CRLFs", "HTTP/1.1 200 OK\r\nX: 1\nContent-Length: 0\r\n\r\n", error("bare LF")],
  ["a bare CR", "HTTP/1.1 200 OK\r\nX: 1\rContent-Length: 0\r\n\r\n", error("bare CR")],
  ["a head past its bound", `HTTP/1.1 200 OK\r\nX: ${big(MAX_HEAD_BYTES)}\r\n\r\n`, error("response head too large")],
  ["a head past its bound, never ended", `HTTP/1.1 200 OK\r\nX: ${big(MAX_HEAD_BYTES)}`, error("response head too large")],
];

const statuses: Row[] = [
  ["100 Continue, then the answer", "HTTP/1.1 100 Continue\r\n\r\n" + head(["HTTP/1.1 201 Created", "Content-Length: 1"]) + "!", ok(201, "!", true)],
  ["several interim answers, with fields and a length they do not use", "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + head(["HTTP/1.1 204 No Content"]), ok(204, "", true)],
  ["a malformed interim answer", "HTTP/1.1 100 Continue\r\nbad\r\n\r\n" + head(["HTTP/1.1 200 OK"]), error("malformed response header")],
  ["101 Switching Protocols", head(["HTTP/1.1 101 Switching Protocols", "Upgrade: h2c"]), error("unexpected protocol switch")],
  ["204 without a body", head(["HTTP/1.1 204 No Content"]), ok(204, "", true)],
  ["204 with Content-Length 0", head(["HTTP/1.1 204 No Content", "Content-Length: 0"]), ok(204, "", true)],
  ["204 claiming a body: none read, connection dropped", head(["HTTP/1.1 204 No Content", "Content-Length: 5"]), ok(204, "", false)],
  ["304 with chunked: none read, connection dropped", head(["HTTP/1.1 304 Not Modified", "Transfer-Encoding: chunked"]), ok(304, "", false)],
  ["304 without a body", head(["HTTP/1.1 304 Not Modified"]), ok(304, "", true)],
  ["a 3xx is an answer like any other", head(["HTTP/1.1 302 Found", "Location: http://10.0.0.1/", "Content-Length: 0"]), ok(302, "", true)],
];

const closes: Row[] = [
  ["closed before any byte", "", none],
  ["closed in the status line", "HTTP/1.1 20", none],
  ["closed in the head", "HTTP/1.1 200 OK\r\nContent-Len", none],
  ["closed after an interim answer", "HTTP/1.1 100 Continue\r\n\r\n", none],
  ["closed in a Content-Length body", head(["HTTP/1.1 200 OK", "Content-Length: 5"]) + "hell", none],
  ["closed in a chunk size", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "1", none],
  ["closed in a chunk", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "5\r\nhel", none],
  ["closed before a chunk's CRLF", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "5\r\nhello\r", none],
  ["closed before the last chunk", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "5\r\nhello\r\n", none],
  ["closed in the trailers", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "0\r\nX: 1\r\n", none],
  ["closed before the blank line after the last chunk", head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]) + "0\r\n", none],
  ["closed after the head of a body until the close", head(["HTTP/1.1 503 Busy"]), atClose(503, "")],
  ["closed in a body past the snippet: the answer came before", head(["HTTP/1.1 200 OK", "Content-Length: 9999"]) + big(SNIPPET_BYTES + 5), ok(200, big(SNIPPET_BYTES), false)],
];

/** Feeds `pieces`, then the close; what came out, and after which piece (pieces.length: at the close). */
function read(pieces: Buffer[]): { answer: Answer | null; at: number; error?: string } {
  const reader = new ResponseReader();
  for (let i = 0; i < pieces.length; i++) {
    try {
      const answer = reader.push(pieces[i]!);
      if (answer) return { answer, at: i };
    } catch (e) {
      return { answer: null, at: i, error: (e as Error).message };
    }
  }
  return { answer: reader.closed(), at: pieces.length };
}

function check(raw: string, expected: Outcome, pieces: Buffer[]): void {
  const got = read(pieces);
  if ("error" in expected) {
    expect(got.error).toContain(expected.error);
    return;
  }
  expect(got.error).toBeUndefined();
  if ("none" in expected) {
    expect(got.answer).toBeNull();
    return;
  }
  expect(got.answer).toMatchObject(expected.answer);
  // An answer framed by its length or chunks comes with its last byte, not at the close.
  expect(got.at === pieces.length).toBe(expected.atClose === true);
  if (!expected.atClose) expect(pieces.slice(0, got.at + 1).reduce((n, p) => n + p.length, 0)).toBeLessThanOrEqual(raw.length);
}

const bytes = (raw: string) => Buffer.from(raw, "latin1");

describe.each([
  ["framing", framing],
  ["Content-Length", lengths],
  ["chunks", chunks],
  ["connection reuse", connection],
  ["heads", heads],
  ["status codes", statuses],
  ["early closes", closes],
] as const)("the response reader: %s", (_, rows) => {
  // A rest parameter: a callback declaring more parameters than a row has would be taken to want `done`.
  test.each(rows as Row[])("%s", (...[, raw, expected, options]: Row) => {
    check(raw, expected, raw === "" ? [] : [bytes(raw)]);
    // A byte at a time; a head past its bound is not worth 64 Ki pushes.
    if (!options?.whole && raw.length < 8192) check(raw, expected, [...bytes(raw)].map((b) => Buffer.from([b])));
  });
});
