// Outbound HTTP to listener URLs: the SSRF guard and the one request per attempt.
//
// Threat: a tenant registers a URL whose host is (or later resolves to) an internal address, and the worker
// becomes a proxy into the private network. So the host is resolved and checked at save time and again before
// every request, and the socket connects to exactly the address that passed the check (a pinned `lookup`),
// so DNS rebinding between check and connect cannot redirect it. Host header and TLS SNI keep the hostname.
// Plain HTTP is written on a socket to the checked address, with the name as Host (socket-send.ts: a third of
// fetch's CPU); HTTPS to an IP literal goes through fetch (fetch-send.ts, a third of node:http's CPU in Bun);
// HTTPS to a name stays on node:http, whose `lookup` option pins the address while the TLS handshake keeps the name.
//
// Listeners are untrusted servers: every attempt has a watchdog that ends it whatever phase it is stuck in,
// redirects are never followed (a 3xx could point anywhere, including inside), and at most 1 KiB of the
// response is read.
import { lookup as dnsLookup } from "node:dns/promises";
import http, { type ClientRequest, type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { fetchRequest, headersExcept, SNIPPET_BYTES, type ResponseHead } from "./fetch-send.ts";
import { SocketPool, socketRequest } from "./socket-send.ts";

type IP = ipaddr.IPv4 | ipaddr.IPv6;

export type TargetPolicy = { allow: Array<[IP, number]> };

export type ResolvedAddress = { address: string; family: number };
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** `literal`: the URL's host was the address itself, so there is no name whose lookup must be pinned. */
export type Target = { ok: true; address: string; family: 4 | 6; literal?: true } | { ok: false; reason: string };

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
  return { ok: true, address: ip.toString(), family: ip.kind() === "ipv4" ? 4 : 6 };
}

/**
 * The decision for a URL whose host is an IP literal never changes under one policy, and parsing it (URL, then
 * ipaddr.js) was about 4 % of the worker's CPU per delivery. Names are not remembered: each send resolves them
 * again, so a name that rebinds to a private address is refused on the next send.
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
    const decision: Target = isAllowedAddress(host, policy) ? { ...toTarget(host), literal: true } : { ok: false, reason: `${host} is not a public address` };
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
  if (refused) return { ok: false, reason: `${host} resolves to ${refused.address}, which is not a public address` };
  return toTarget(addresses[0]!.address);
}

// One keep-alive agent per listener, so fan-out reuses connections and one listener's sockets are bounded.
// maxSockets should be at least the per-listener concurrency cap: requests queued inside the agent wait on
// the watchdog's clock. Evicted agents are dropped, not destroyed, because they may have requests in flight;
// their idle sockets close after idleMs.
export class AgentPool {
  private readonly agents = new Map<string, http.Agent>();
  /** The keep-alive connections of the plain-HTTP path (socket-send.ts). */
  readonly sockets: SocketPool;

  constructor(private readonly options: { maxSockets?: number; maxAgents?: number; idleMs?: number } = {}) {
    this.sockets = new SocketPool(options.maxSockets ?? 16);
  }

  get(key: string, secure: boolean, insecureTls: boolean): http.Agent {
    const id = `${secure ? "https" : "http"}${insecureTls ? "+insecure" : ""}:${key}`;
    const existing = this.agents.get(id);
    if (existing) {
      this.agents.delete(id);
      this.agents.set(id, existing);
      return existing;
    }
    const options = { keepAlive: true, maxSockets: this.options.maxSockets ?? 16, timeout: this.options.idleMs ?? 30_000 };
    const agent = secure ? new https.Agent({ ...options, rejectUnauthorized: !insecureTls }) : new http.Agent(options);
    this.agents.set(id, agent);
    if (this.agents.size > (this.options.maxAgents ?? 1000)) this.agents.delete(this.agents.keys().next().value!);
    return agent;
  }

  // For shutdown, after sends in flight have finished.
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
    this.sockets.close();
  }
}

const sharedAgents = new AgentPool();

export type SendRequest = {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  policy: TargetPolicy;
  agentKey?: string;
  method?: "POST" | "GET";
  // Only for tests against self-signed receivers; production verifies certificates.
  insecureTls?: boolean;
  agents?: AgentPool;
  resolve?: Resolver;
};

export type SendResult =
  | { status: number; durationMs: number; retryAfter: string | null; bodySnippet: string }
  | { status: null; durationMs: number; error: string };

const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "connect timed out",
};

// Messages end up in attempts.last_error, shown to the tenant: short, and never the URL (it may hold a token).
function describeError(e: unknown): string {
  const err = e as { code?: string; message?: string } | undefined;
  const code = err?.code ?? "";
  if (ERROR_TEXT[code]) return ERROR_TEXT[code];
  const text = err?.message ?? String(e);
  return (/CERT|TLS|SSL|SELF_SIGNED/.test(code) ? `tls: ${text}` : text).slice(0, 200);
}

// Node's lookup contract: callback(err, address, family), or an array of them when options.all is set.
function pinnedLookup(address: string, family: 4 | 6) {
  return (_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function readResponse(res: IncomingMessage, onDone: (r: ResponseHead) => void, onError: (e: unknown) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    const bodySnippet = Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString("utf8");
    const retryAfter = res.headers["retry-after"] ?? null;
    onDone({ status: res.statusCode ?? 0, retryAfter, bodySnippet });
  };
  res.on("data", (chunk: Buffer) => {
    if (done) return;
    chunks.push(chunk);
    size += chunk.length;
    // Draining a huge or endless body would hold a concurrency slot; losing the keep-alive socket is cheaper.
    if (size > SNIPPET_BYTES) {
      finish();
      res.destroy();
    }
  });
  res.on("end", finish);
  res.on("error", onError);
  // After a complete response the close is the normal end: no error to build (a stack trace per delivery).
  res.on("close", () => {
    if (!done) onError(new Error("connection closed before the response ended"));
  });
}

function openRequest(req: SendRequest, target: { address: string; family: 4 | 6 }, onDone: (r: ResponseHead) => void, onError: (e: unknown) => void): ClientRequest {
  const secure = new URL(req.url).protocol === "https:";
  const method = req.method ?? "POST";
  const headers = headersExcept(req.headers, ["content-length"]);
  if (method === "POST") headers["content-length"] = String(Buffer.byteLength(req.body));
  const options: https.RequestOptions = {
    method,
    headers,
    agent: (req.agents ?? sharedAgents).get(req.agentKey ?? "", secure, req.insecureTls === true),
    lookup: pinnedLookup(target.address, target.family) as unknown as https.RequestOptions["lookup"],
    rejectUnauthorized: !req.insecureTls,
  };
  const request = (secure ? https : http).request(req.url, options, (res) => readResponse(res, onDone, onError));
  request.on("error", onError);
  request.end(method === "POST" ? req.body : undefined);
  return request;
}

// Never rejects. Bun's fetch has cases where AbortSignal.timeout does not fire during DNS or connect, and
// socket timeouts only cover idle sockets, so a plain timer bounds the whole attempt: lookup, connect, TLS,
// headers and body.
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
    const fail = (error: string) => {
      if (settled) return;
      inFlight?.destroy();
      settle({ status: null, durationMs: elapsed(), error });
    };
    const watchdog = setTimeout(() => fail(`timeout after ${req.timeoutMs}ms`), req.timeoutMs);
    resolveTarget(req.url, req.policy, req.resolve).then(
      (target) => {
        if (settled) return;
        if (!target.ok) return fail(`refused target: ${target.reason}`);
        try {
          const onDone = (response: ResponseHead) => settle({ ...response, durationMs: elapsed() });
          const onError = (e: unknown) => fail(describeError(e));
          inFlight = req.url.startsWith("http:") ? socketRequest(req, target, (req.agents ?? sharedAgents).sockets, onDone, onError)
            : target.literal ? fetchRequest(req, target, onDone, onError)
            : openRequest(req, target, onDone, onError);
        } catch (e) {
          // request() throws synchronously on a malformed header or URL; unhandled, it would look like a timeout.
          fail(describeError(e));
        }
      },
      (e) => fail(describeError(e)),
    );
  });
}
