/**
 * Who may read /metrics (docs/metrics.md). With a token configured, any address that sends
 * `Authorization: Bearer <token>`; without one, loopback clients only, so a fresh instance on a public
 * interface does not publish its organizations' names and volumes to the world.
 *
 * The client address is the one the rest of the service uses: the socket's peer, or with --trust-proxy the
 * left-most X-Forwarded-For entry. A reverse proxy on the same host connects from loopback; behind one, either
 * turn on --trust-proxy (the proxy's X-Forwarded-For then names the real client) or set a token.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import ipaddr from "ipaddr.js";

export type MetricsRequest = {
  token: string | undefined;
  authorization: string | null;
  peer: string | null | undefined;
  forwardedFor: string | null;
  trustProxy: boolean;
};

export type Decision = { allowed: true } | { allowed: false; status: 401 | 403; detail: string };

/**
 * Any address in 127.0.0.0/8 or ::1, also written IPv4-mapped (::ffff:127.0.0.1). Anything else, or nothing, is
 * not; nor are the other spellings ipaddr.js would read (`127.1`, `0x7f000001`), which no socket reports.
 */
export function isLoopback(address: string | null | undefined): boolean {
  if (!address) return false;
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  if (!ipaddr.IPv4.isValidFourPartDecimal(bare) && !ipaddr.IPv6.isValid(bare)) return false;
  return ipaddr.process(bare).range() === "loopback";
}

/** Compared as SHA-256 digests in constant time, so the comparison's duration says nothing about the token. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function decideMetricsAccess(r: MetricsRequest): Decision {
  if (r.token !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(r.authorization ?? "");
    if (match && sameSecret(match[1]!, r.token)) return { allowed: true };
    return { allowed: false, status: 401, detail: "GET /metrics needs the configured metrics token as `Authorization: Bearer <token>`." };
  }
  const forwarded = r.trustProxy ? r.forwardedFor?.split(",")[0]?.trim() : undefined;
  if (isLoopback(forwarded || r.peer)) return { allowed: true };
  return { allowed: false, status: 403, detail: "Without --metrics-token, GET /metrics answers loopback clients only." };
}
