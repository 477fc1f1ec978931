// Seeded fuzzing of the response reader: valid answers built from random parts (interim answers, every framing,
// list-valued and folded fields, chunk extensions, trailers, bodies around the snippet size), split at random
// byte boundaries, cut short, followed by stray bytes, or broken in one known way. Each case knows its outcome
// by construction: the answer and the byte it must come with (or the close), an error, or nothing. A wrong
// acknowledgement (a 2xx the bytes do not make, or a missed one), an answer later than its last byte (a hang
// on a keep-alive connection), or a crash fails with the seed and the case. FUZZ_SEED replays one run.
import { describe, expect, test } from "bun:test";
import { ResponseReader, SNIPPET_BYTES, type Answer } from "./response";
import { SocketPool } from "./client";

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);

type Random = { int(n: number): number; chance(p: number): boolean; pick<T>(xs: readonly T[]): T };
function random(seed: number): Random {
  let a = seed >>> 0;
  const next = () => { // mulberry32
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n) => Math.floor(next() * n), chance: (p) => next() < p, pick: (xs) => xs[Math.floor(next() * xs.length)]! };
}

/** `at`: the answer comes with this many bytes read, or only at the close. */
type Expected =
  | { kind: "answer"; status: number; snippet: string; reusable: boolean; at: number | "close" }
  | { kind: "error" }
  | { kind: "none" };
type Case = { raw: string; expected: Expected; what: string };

const STATUSES = [200, 201, 202, 204, 226, 299, 301, 304, 400, 404, 410, 429, 500, 503] as const;
// Each with what it means: close wanted, keep-alive asked for (which only HTTP/1.0 needs).
const CONNECTIONS: Array<[lines: string[], close: boolean, keepAlive: boolean]> = [
  [[], false, false], [["Connection: keep-alive"], false, true], [["Connection: close"], true, false],
  [["Connection: Close"], true, false], [["Connection: keep-alive-not-close"], false, false], [["Connection: closed"], false, false],
  [["Connection: te, close"], true, false], [["Connection: Keep-Alive , upgrade"], false, true], [["Connection: x", "Connection: close"], true, false],
];
const CHUNKED_TE = [["chunked"], ["Chunked"], ["gzip, chunked"], ["gzip", "chunked"], ["gzip,\r\n chunked"], [" chunked ,"]];
const OTHER_TE = [["gzip"], ["chunked, gzip"], ["chunked;q=1"], [""]];
const ALPHABET = "abcxyz0129 :;\r\n\t{}\"HTTP/1.";

const NOISE = Array.from({ length: 8192 }, (_, i) => ALPHABET[(i * 7919 + (i >> 3) * 31) % ALPHABET.length]).join("");

/** Bodies around the sizes that matter: empty, small, the snippet's edge, past it (or small only). */
function bodyOf(r: Random, small: boolean): string {
  const n = small ? r.int(40) : r.pick([0, 1 + r.int(40), SNIPPET_BYTES - 3 + r.int(6), SNIPPET_BYTES + r.int(2500)]);
  const from = r.int(NOISE.length - n);
  return NOISE.slice(from, from + n);
}

/** The body in chunks; `cut`: where the data byte past the snippet ends within the encoding. */
function chunked(r: Random, body: string): { text: string; cut: number } {
  let text = "";
  let cut = Infinity;
  for (let i = 0; i < body.length;) {
    const n = Math.min(body.length - i, 1 + r.int(r.chance(0.5) ? 8 : 700));
    const size = "0".repeat(r.int(3)) + (r.chance(0.5) ? n.toString(16) : n.toString(16).toUpperCase());
    text += `${size}${r.pick(["", ";a=b", " ;x", ';n="v"'])}\r\n`;
    if (i <= SNIPPET_BYTES && SNIPPET_BYTES < i + n) cut = text.length + SNIPPET_BYTES - i + 1;
    text += `${body.slice(i, i + n)}\r\n`;
    i += n;
  }
  text += `0${r.pick(["", ";end"])}\r\n${r.pick(["", "X-Sum: 1\r\n", "A: 1\r\nB: 2\r\n"])}\r\n`;
  return { text, cut };
}

/** A body as sent: `cut` is where the byte past the snippet ends in `encoded`; `open`: it claims more than is sent. */
type Framed = {
  framing: "none" | "framed" | "close"; encoded: string; data: string; cut: number; chunked: boolean; suspect: boolean; open: boolean; lines: string[];
};
type Built = Framed & { head: string; reusable: boolean; status: number };

const plainCut = (data: string) => (data.length > SNIPPET_BYTES ? SNIPPET_BYTES + 1 : Infinity);

/** The framing fields and the body under them. */
function frame(r: Random, status: number, body: string, http10: boolean): Framed {
  const plain = { encoded: body, data: body, cut: plainCut(body), chunked: false, suspect: false, open: false };
  if (status === 204 || status === 304) {
    const extra = r.pick(["", "Content-Length: 0", "Content-Length: 7", "Transfer-Encoding: chunked"]);
    const suspect = extra !== "" && extra !== "Content-Length: 0";
    return { ...plain, framing: "none", encoded: "", data: "", cut: Infinity, suspect, lines: extra ? [extra] : [] };
  }
  if (r.chance(0.45)) {
    const n = String(body.length);
    // A length far past the body sent: read to the snippet's end, never to the length.
    if (body.length > SNIPPET_BYTES && r.chance(0.2)) {
      return { ...plain, framing: "framed", open: true, lines: [`Content-Length: ${r.pick([9007199254740991, body.length + 1 + r.int(1e9)])}`] };
    }
    const lines = r.pick([[`Content-Length: ${n}`], [`Content-Length: ${n}, 0${n}`], [`Content-Length: ${n}`, `content-length: ${n}`]]);
    return { ...plain, framing: "framed", lines };
  }
  if (r.chance(0.65)) {
    const { text, cut } = chunked(r, body);
    const lines = r.pick(CHUNKED_TE).map((v) => `Transfer-Encoding: ${v}`);
    if (r.chance(0.2)) lines.push(`Content-Length: ${r.int(5000)}`);
    const suspect = lines.some((l) => l.startsWith("Content-Length")) || http10;
    return { ...plain, framing: "framed", encoded: text, cut, chunked: true, suspect, lines };
  }
  if (r.chance(0.6)) return { ...plain, framing: "close", lines: [] };
  const encoded = r.chance(0.5) ? chunked(r, body).text : body;
  const lines = r.pick(OTHER_TE).map((v) => `Transfer-Encoding: ${v}`);
  return { ...plain, framing: "close", encoded, data: encoded, cut: plainCut(encoded), lines };
}

/** A valid answer, and how it must be read; `broken` adds one malformed framing field. */
function build(r: Random, broken?: "cl" | "te", small = false): Built {
  const http10 = r.chance(0.15);
  const status = r.pick(STATUSES);
  const [connLines, close, keepAlive] = r.pick(CONNECTIONS);
  const framed = frame(r, status, bodyOf(r, small), http10);
  const lines = [...connLines, ...framed.lines];
  for (let i = r.int(3); i > 0; i--) lines.push(r.pick(["X-A: 1", "X-Fold: a\r\n  b", "Retry-After: 3", "Server: x", "X-Empty:"]));
  if (broken === "cl") lines.push(r.pick(["Content-Length: -1", "Content-Length: 1.0", "Content-Length: 0x1", "Content-Length: 9007199254740993", "Content-Length: 1,2", "Content-Length:"]));
  if (broken === "te") lines.push("Transfer-Encoding: chunked, chunked");
  // Shuffled, but the Transfer-Encoding lines keep their order: together they are one list.
  const codings = lines.filter((l) => l.startsWith("Transfer-Encoding"));
  for (let i = lines.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
  }
  for (let i = 0; i < lines.length; i++) if (lines[i]!.startsWith("Transfer-Encoding")) lines[i] = codings.shift()!;
  let interim = "";
  for (let i = r.int(3); i > 0; i--) interim += r.pick(["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"]);
  const head = `${interim}HTTP/1.${http10 ? 0 : 1} ${status} ${r.pick(["OK", "", "Some Reason"])}\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`;
  const persistent = !close && (!http10 || keepAlive);
  return { ...framed, head, status, reusable: persistent && !framed.suspect && framed.framing !== "close" };
}

/** The outcome of `built` read to `length` bytes, then closed. */
function expectation(b: Built, length: number): Expected {
  const total = b.head.length + b.encoded.length;
  const cut = b.head.length + b.cut;
  const complete = b.framing === "close" || b.open ? Infinity : total;
  const answerAt = Math.min(cut, complete);
  const snippet = b.data.slice(0, SNIPPET_BYTES);
  if (length >= answerAt) return { kind: "answer", status: b.status, snippet, reusable: b.reusable && cut === Infinity, at: answerAt };
  if (b.framing === "close" && length >= b.head.length) {
    return { kind: "answer", status: b.status, snippet: b.data.slice(0, length - b.head.length), reusable: false, at: "close" };
  }
  return { kind: "none" };
}

const BREAKS = ["status", "colon", "space", "fold", "bare-lf", "bare-cr", "101", "cl", "te", "chunk-size", "chunk-end"] as const;

/** One thing wrong with an otherwise valid answer whose body stays under the snippet, so it cannot end early. */
function broken(r: Random): Case {
  const kind = r.pick(BREAKS);
  const make = () => build(r, kind === "cl" || kind === "te" ? kind : undefined, true);
  const fits = (b: Built) => (kind !== "te" || b.framing !== "none") &&
    (!kind.startsWith("chunk-") || b.chunked) && (kind !== "chunk-end" || b.data.length > 0);
  let b = make();
  while (!fits(b)) b = make();
  let { head, encoded } = b;
  const at = head.lastIndexOf("HTTP/1.");
  const swap = (text: string, from: string, to: string) => text.slice(0, at) + text.slice(at).replace(from, to);
  if (kind === "status") head = head.slice(0, at) + r.pick(["HTTP/1.1 2000 OK", "HTTP/2 200", "HTTP/1.1 20 OK", "http/1.1 200 OK", "HTTP/1.1 -200 OK", "HTTP/1.1 099 X"]) + head.slice(head.indexOf("\r\n", at));
  if (kind === "colon") head = swap(head, "\r\n", "\r\nX-No-Colon\r\n");
  if (kind === "space") head = swap(head, "\r\n", "\r\nX-Space : 1\r\n");
  if (kind === "fold") head = swap(head, "\r\n", "\r\n folded\r\n");
  if (kind === "bare-lf") {
    const crlfs = [...head.slice(at).matchAll(/\r\n/g)].map((m) => at + m.index);
    const i = r.pick(crlfs);
    head = head.slice(0, i) + head.slice(i + 1);
  }
  if (kind === "bare-cr") head = swap(head, "\r\n", "\r\nX-Cr: a\rb\r\n");
  if (kind === "101") head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n" + head;
  if (kind === "chunk-size") encoded = r.pick(["-1", "0x5", "g", "", " 5", "20000000000000", "1 2"]) + encoded.slice(encoded.indexOf("\r\n"));
  if (kind === "chunk-end") {
    const size = parseInt(encoded, 16);
    const dataEnd = encoded.indexOf("\r\n") + 2 + size;
    encoded = encoded.slice(0, dataEnd) + "XY" + encoded.slice(dataEnd + 2);
  }
  return { raw: head + encoded, expected: { kind: "error" }, what: `broken: ${kind}` };
}

function generate(r: Random): Case {
  if (r.chance(0.3)) return broken(r);
  const b = build(r);
  const total = b.head.length + b.encoded.length;
  if (r.chance(0.35)) {
    const length = r.int(total + (b.framing === "close" ? 1 : 0));
    return { raw: (b.head + b.encoded).slice(0, length), expected: expectation(b, length), what: `cut at ${length} of ${total}` };
  }
  const junk = b.framing !== "close" && !b.open && r.chance(0.2) ? r.pick(["HTTP/1.1 200 OK\r\n\r\n", "x", "\r\n"]) : "";
  return { raw: b.head + b.encoded + junk, expected: expectation(b, total), what: junk ? "valid, then stray bytes" : "valid" };
}

function split(r: Random, raw: string): Buffer[] {
  const bytes = Buffer.from(raw, "latin1");
  if (bytes.length === 0) return [];
  if (r.chance(0.1) && bytes.length <= 1500) return [...bytes].map((x) => Buffer.from([x]));
  const cuts = new Set<number>();
  for (let i = r.chance(0.1) ? 0 : 1 + r.int(20); i > 0; i--) cuts.add(1 + r.int(bytes.length));
  const points = [0, ...[...cuts].sort((x, y) => x - y).filter((p) => p < bytes.length), bytes.length];
  return points.slice(1).map((end, i) => bytes.subarray(points[i]!, end));
}

/** `read`: bytes read when the answer came, `before`: before the piece it came with. */
type Got = { kind: "answer"; answer: Answer; read: number; before: number; atClose: boolean } | { kind: "error"; message: string } | { kind: "none" };

/** The pieces in order, then the close: the close is the event after which the reader must have decided. */
function run(pieces: Buffer[]): Got {
  const reader = new ResponseReader();
  let read = 0;
  for (const piece of pieces) {
    read += piece.length;
    let answer: Answer | null;
    try {
      answer = reader.push(piece);
    } catch (e) {
      // The reader refuses with a plain Error; a TypeError or RangeError is a crash.
      if ((e as Error).constructor !== Error) throw e;
      return { kind: "error", message: (e as Error).message };
    }
    if (answer) return { kind: "answer", answer, read, before: read - piece.length, atClose: false };
  }
  const answer = reader.closed();
  return answer ? { kind: "answer", answer, read, before: read, atClose: true } : { kind: "none" };
}

/** Null when `got` is what `expected` says; else what differs. */
function mismatch(expected: Expected, got: Got): string | null {
  if (expected.kind !== "answer") return got.kind === expected.kind ? null : `expected ${expected.kind}`;
  if (got.kind !== "answer") return `expected an answer (${expected.status})`;
  const { status, bodySnippet, reusable } = got.answer;
  if (status !== expected.status || bodySnippet !== expected.snippet) return `expected status ${expected.status} and ${JSON.stringify(expected.snippet.slice(0, 60))}`;
  if ((expected.at === "close") !== got.atClose) return expected.at === "close" ? "answered before the close" : "answered only at the close";
  if (expected.at !== "close" && (got.read < expected.at || got.before >= expected.at)) {
    return `expected the answer with byte ${expected.at}, got it after ${got.read}`;
  }
  const wantReuse = expected.reusable && (expected.at === "close" || got.read === expected.at);
  return reusable === wantReuse ? null : `expected reusable ${wantReuse}`;
}

function describeCase(seed: number, i: number, c: Case, pieces: Buffer[], got: Got, problem: string): string {
  return `seed ${seed} (FUZZ_SEED=${seed}), case ${i} [${c.what}]: ${problem}; got ${JSON.stringify(got).slice(0, 300)}\n` +
    `pieces ${JSON.stringify(pieces.map((p) => p.length))}\nraw ${JSON.stringify(c.raw.slice(0, 600))}`;
}

describe("the response reader under seeded fuzzing", () => {
  test("4000 cases: every answer acknowledged exactly when the bytes make it, nothing else", () => {
    const r = random(SEED);
    const seen = { answer: 0, error: 0, none: 0, close: 0 };
    for (let i = 0; i < 4000; i++) {
      const c = generate(r);
      const pieces = split(r, c.raw);
      const got = run(pieces);
      const problem = mismatch(c.expected, got);
      if (problem) throw new Error(describeCase(SEED, i, c, pieces, got, problem));
      seen[got.kind]++;
      if (got.kind === "answer" && got.atClose) seen.close++;
    }
    // The generator must keep reaching every outcome, or the fuzzing tests less than it claims.
    expect(Math.min(seen.answer, seen.error, seen.none, seen.close)).toBeGreaterThan(200);
  });

  test("300 cases through the client's sockets: each settles once, by the time its connection has closed", async () => {
    const r = random(SEED + 1);
    const pool = new SocketPool({ maxIdlePerKey: 1, maxIdle: 8 });
    type Current = { pieces: Buffer[]; closed: () => void };
    let current: Current | null = null;
    const server = Bun.listen<Current>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        async open(socket) {
          socket.data = current!;
          // One write per loop turn, so the client mostly reads the pieces as they were cut; then a half-close,
          // which the client answers by closing: the server's `close` comes after the client has seen everything.
          for (const piece of socket.data.pieces) {
            socket.write(piece);
            await new Promise((resolve) => setImmediate(resolve));
          }
          socket.shutdown();
        },
        data() {},
        close(socket) {
          socket.data.closed();
        },
      },
    });
    try {
      for (let i = 0; i < 300; i++) {
        let c = generate(r);
        while (c.raw.length > 16_384 || c.what.startsWith("valid, then")) c = generate(r);
        const pieces = split(r, c.raw);
        const outcomes: Array<{ status: number; snippet: string; idle: number } | { error: unknown }> = [];
        const closed = new Promise<void>((resolve) => (current = { pieces, closed: resolve }));
        pool.request(`case-${i}`, "127.0.0.1", server.port, null, Buffer.from("GET / HTTP/1.1\r\nhost: x\r\n\r\n"),
          (a) => outcomes.push({ status: a.status, snippet: a.bodySnippet, idle: pool.idleCount }),
          (error) => outcomes.push({ error }));
        await closed;
        await new Promise((resolve) => setImmediate(resolve));
        const e = c.expected;
        const got = outcomes[0];
        const fail = (problem: string) => {
          throw new Error(`seed ${SEED + 1}, socket case ${i} [${c.what}]: ${problem}; got ${JSON.stringify(outcomes)}\nraw ${JSON.stringify(c.raw.slice(0, 300))}`);
        };
        if (outcomes.length !== 1) fail(outcomes.length === 0 ? "no outcome after the close (a hang)" : "settled twice");
        if (e.kind !== "answer") {
          if (!got || !("error" in got)) fail(`expected an error (${e.kind})`);
        } else if (!got || "error" in got || got.status !== e.status || got.snippet !== e.snippet) {
          fail(`expected status ${e.status} and ${JSON.stringify(e.snippet.slice(0, 60))}`);
        } else if (e.at !== "close" && got.idle !== (e.reusable ? 1 : 0)) {
          fail(`expected reusable ${e.reusable}`);
        }
      }
    } finally {
      pool.destroy();
      server.stop(true);
    }
  });
});
