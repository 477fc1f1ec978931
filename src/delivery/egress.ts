// Outbound HTTP to listener URLs: the SSRF guard and the one request per attempt.
//
// Threat: a tenant registers a URL whose host is (or later resolves to) an internal address, and the worker
// becomes a proxy into the private network. So the host is resolved and checked at save time and again before
// every request, and the socket connects to exactly the address that passed the check (http1/client.ts), so DNS
// rebinding between check and connect cannot redirect it. Host header and TLS name keep the hostname.
//
// Listeners are untrusted servers: every attempt has a watchdog that ends it whatever phase it is stuck in,
// redirects are never followed (a 3xx could point anywhere, including inside), and at most 1 KiB of the
// response is read.
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { socketRequest, type SocketPool } from "./http1/client.ts";
import type { ResponseHead } from "./http1/response.ts";

type IP = ipaddr.IPv4 | ipaddr.IPv6;

export type TargetPolicy = { allow: Array<[IP, number]> };

export type ResolvedAddress = { address: string; family: number };
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export type Target = { ok: true; address: string } | { ok: false; reason: string };

// A refusal names the setting that lifts it: the operator reading a 422 or an attempt's error learns the way out.
const NOT_PUBLIC = "not a public address; allow it with --allow-targets (FANOUT_ALLOW_TARGETS)";

// Only 2000::/3 is allocated as global unicast; ipaddr.js calls every unlisted IPv6 block "unicast",
// including the deprecated IPv4-compatible ::a.b.c.d, which some stacks still route to IPv4.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");

// An IPv4-mapped IPv6 address reaches the IPv4 host on dual-stack sockets, so it is judged as that host.
function parseAddress(addr: string): IP | undefined {
  const bare = addr.startsWith("[") && addr.endsWith("]") ? addr.slice(1, -1) : addr;
  if (!ipaddr.isValid(bare)) return undefined;
  const ip = ipaddr.parse(bare);
  return ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

// Accepts CIDRs and bare addresses (a single host). A typo here must stop startup, not silently allow nothing.
export function makeTargetPolicy(cidrs: string[]): TargetPolicy {
  const allow = cidrs.map((text): [IP, number] => {
    const cidr = text.trim();
    if (!cidr.includes("/")) {
      const ip = parseAddress(cidr);
      if (!ip) throw new Error(`invalid allowed target: ${text}`);
      return [ip, ip.kind() === "ipv4" ? 32 : 128];
    }
    if (!ipaddr.isValidCIDR(cidr)) throw new Error(`invalid allowed target: ${text}`);
    const [ip, bits] = ipaddr.parseCIDR(cidr);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [ip, bits];
  });
  return { allow };
}

export function isAllowedAddress(addr: string, policy: TargetPolicy): boolean {
  const ip = parseAddress(addr);
  if (!ip) return false;
  if (policy.allow.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits))) return true;
  if (ip.range() !== "unicast") return false;
  return ip.kind() === "ipv4" || ip.match(GLOBAL_UNICAST_V6);
}

const resolveWithDns: Resolver = (host) => dnsLookup(host, { all: true });

function parseTargetUrl(url: string): { host: string } | { reason: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // URL throws a TypeError whose text adds nothing for the caller; the reason below is the whole story.
    return { reason: "not an absolute URL" };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { reason: "only http and https URLs are allowed" };
  if (parsed.username || parsed.password) return { reason: "credentials in the URL are not allowed" };
  const host = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { host };
}

function toTarget(address: string): Extract<Target, { ok: true }> {
  const ip = parseAddress(address)!;
  return { ok: true, address: ip.toString() };
}

/**
 * The decision for a URL whose host is an IP literal never changes under one policy: remembered, it is not parsed
 * again (URL, then ipaddr.js) on the worker's hot path. Names are not remembered: each send resolves them again,
 * so a name that rebinds to a private address is refused on the next send.
 */
const literalDecisions = new WeakMap<TargetPolicy, Map<string, Target>>();
const MAX_REMEMBERED = 10_000;

// Refuses the host if ANY of its addresses is refused: the client might pick that one, and a host that
// mixes public and private records is exactly what a rebinding attacker publishes.
export async function resolveTarget(url: string, policy: TargetPolicy, resolve: Resolver = resolveWithDns): Promise<Target> {
  const remembered = literalDecisions.get(policy)?.get(url);
  if (remembered) return remembered;
  const parsed = parseTargetUrl(url);
  if ("reason" in parsed) return { ok: false, reason: parsed.reason };
  const { host } = parsed;
  if (isIP(host)) {
    const decision: Target = isAllowedAddress(host, policy) ? toTarget(host) : { ok: false, reason: `${host} is ${NOT_PUBLIC}` };
    const memo = literalDecisions.get(policy) ?? new Map<string, Target>();
    if (memo.size >= MAX_REMEMBERED) memo.clear();
    literalDecisions.set(policy, memo.set(url, decision));
    return decision;
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await resolve(host);
  } catch (e) {
    return { ok: false, reason: `cannot resolve ${host} (${(e as { code?: string }).code ?? "error"})` };
  }
  if (addresses.length === 0) return { ok: false, reason: `cannot resolve ${host} (no addresses)` };
  const refused = addresses.find((a) => !isAllowedAddress(a.address, policy));
  if (refused) return { ok: false, reason: `${host} resolves to ${refused.address}, which is ${NOT_PUBLIC}` };
  return toTarget(addresses[0]!.address);
}

export type SendRequest = {
  url: string;
  /** Text, or its UTF-8 bytes. */
  body: string | Uint8Array;
  headers: Record<string, string>;
  /** Headers the same object carries for many requests (a listener's), never changed once sent: checked and written out once per object. */
  sharedHeaders?: Readonly<Record<string, string>>;
  timeoutMs: number;
  policy: TargetPolicy;
  /** Connections are kept and reused per key: a listener's own. */
  poolKey?: string;
  method?: "POST" | "GET";
  // Only for tests against self-signed receivers; production verifies certificates.
  insecureTls?: boolean;
  // Only for tests: a CA trusted besides the system's, so a certificate can pass its chain and fail its name.
  ca?: string;
  /** The connections kept alive to listeners (http1/client.ts): the worker's, or a test's own. */
  pool: SocketPool;
  resolve?: Resolver;
};

/** Why a request got no answer: the watchdog fired, no connection could be made (or was allowed), or it broke. */
export type FailureKind = "timeout" | "refused" | "failed";

export type SendResult =
  | { status: number; durationMs: number; retryAfter: string | null; bodySnippet: string }
  | { status: null; durationMs: number; error: string; kind: FailureKind };

const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connect timed out",
};

const NO_CONNECTION = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH"]);

function kindOf(e: unknown): FailureKind {
  const code = (e as { code?: string } | undefined)?.code ?? "";
  return NO_CONNECTION.has(code) ? "refused" : code === "ETIMEDOUT" ? "timeout" : "failed";
}

// Messages end up in attempts.last_error, shown to the tenant: short, and never the URL (it may hold a token).
function describeError(e: unknown): string {
  const err = e as { code?: string; message?: string } | undefined;
  const code = err?.code ?? "";
  if (ERROR_TEXT[code]) return ERROR_TEXT[code];
  const text = err?.message ?? String(e);
  return (/CERT|TLS|SSL|SELF_SIGNED/.test(code) ? `tls: ${text}` : text).slice(0, 200);
}

// Never rejects. A plain timer bounds the whole attempt (lookup, connect, TLS, headers and body): a resolver or
// a server can stall in any phase, and socket timeouts only see idle sockets.
export function send(req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    let inFlight: { destroy(): void } | undefined;
    const settle = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(watchdog);
      resolve(result);
    };
    const fail = (error: string, kind: FailureKind) => {
      if (settled) return;
      inFlight?.destroy();
      settle({ status: null, durationMs: elapsed(), error, kind });
    };
    const failWith = (e: unknown) => fail(describeError(e), kindOf(e));
    const watchdog = setTimeout(() => fail(`timeout after ${req.timeoutMs}ms`, "timeout"), req.timeoutMs);
    resolveTarget(req.url, req.policy, req.resolve).then(
      (target) => {
        if (settled) return;
        if (!target.ok) return fail(`refused target: ${target.reason}`, "refused");
        try {
          const onDone = (response: ResponseHead) => settle({ ...response, durationMs: elapsed() });
          inFlight = socketRequest(req, target, req.pool, onDone, failWith);
        } catch (e) {
          // encode() throws on a header that could split the message; unhandled, it would look like a timeout.
          failWith(e);
        }
      },
      failWith,
    );
  });
}
