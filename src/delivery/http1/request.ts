// A delivery or probe as HTTP/1.1 bytes, and the parts of its URL a connection needs.
import type { SendRequest } from "../egress.ts";

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers this file writes itself: a caller's would frame the message twice. */
const FRAMING = new Set(["content-length", "host", "connection", "transfer-encoding"]);

/** Path, Host header, port, and for TLS the name the certificate must carry (a literal's address, unbracketed). */
export type Origin = { path: string; host: string; port: number; secure: boolean; name: string };

const origins = new Map<string, Origin>();
const MAX_REMEMBERED = 10_000;

/** A URL's parts; remembered, because a listener's URL is parsed again for every delivery otherwise. */
export function originOf(url: string): Origin {
  let origin = origins.get(url);
  if (origin) return origin;
  const u = new URL(url);
  const secure = u.protocol === "https:";
  const name = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  origin = { path: `${u.pathname}${u.search}`, host: u.host, port: Number(u.port || (secure ? 443 : 80)), secure, name };
  if (origins.size >= MAX_REMEMBERED) origins.clear();
  origins.set(url, origin);
  return origin;
}

/** Header lines; a header that could split the message throws, as node:http's would. */
function linesOf(headers: Readonly<Record<string, string>>): string {
  let lines = "";
  for (const name in headers) {
    const value = headers[name]!;
    if (FRAMING.has(name.toLowerCase())) continue;
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new TypeError(`invalid header: ${JSON.stringify(name)}`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

/** Shared headers' lines, by object: a listener's deliveries share one, so its headers are checked once, not per delivery. */
const sharedLines = new WeakMap<Readonly<Record<string, string>>, string>();

function sharedLinesOf(headers: Readonly<Record<string, string>> | undefined): string {
  return headers === undefined ? "" : sharedLines.getOrInsertComputed(headers, linesOf);
}

/** The request's bytes: the shared headers, then the request's own. */
export function encode(req: SendRequest, origin: Origin): Buffer {
  const method = req.method ?? "POST";
  const head = `${method} ${origin.path} HTTP/1.1\r\nhost: ${origin.host}\r\n${sharedLinesOf(req.sharedHeaders)}${linesOf(req.headers)}`;
  if (method !== "POST") return Buffer.from(`${head}\r\n`, "latin1");
  const body = typeof req.body === "string" ? Buffer.from(req.body, "utf8") : req.body;
  return Buffer.concat([Buffer.from(`${head}content-length: ${body.length}\r\n\r\n`, "latin1"), body]);
}
