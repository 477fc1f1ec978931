// The token-or-loopback rule of GET /metrics (docs/metrics.md), decided by one function: the e2e tests can only be a
// loopback client, so the refusals of other addresses are checked here.
import { describe, expect, test } from "bun:test";
import { decideMetricsAccess, isLoopback, type MetricsRequest } from "./access.ts";

const TOKEN = "scrape-token-0123456789";
const request = (over: Partial<MetricsRequest>): MetricsRequest =>
  ({ token: undefined, authorization: null, peer: "127.0.0.1", forwardedFor: null, trustProxy: false, ...over });

describe("without a token", () => {
  test("loopback peers are answered: all of 127.0.0.0/8, ::1, and both written IPv4-mapped", () => {
    for (const peer of ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1", "[::1]"]) {
      expect({ peer, decision: decideMetricsAccess(request({ peer })) }).toEqual({ peer, decision: { allowed: true } });
    }
  });

  test("any other peer, or none known, gets 403", () => {
    for (const peer of ["10.0.0.1", "192.168.1.5", "203.0.113.7", "::ffff:10.0.0.1", "fe80::1", "2001:db8::1", "0.0.0.0", "::", "unknown", "", null, undefined]) {
      expect({ peer, status: (decideMetricsAccess(request({ peer })) as { status?: number }).status }).toEqual({ peer, status: 403 });
    }
  });

  test("X-Forwarded-For counts only with --trust-proxy: then the forwarded client decides", () => {
    expect(decideMetricsAccess(request({ forwardedFor: "203.0.113.7" }))).toEqual({ allowed: true });
    expect(decideMetricsAccess(request({ forwardedFor: "203.0.113.7, 127.0.0.1", trustProxy: true }))).toMatchObject({ allowed: false, status: 403 });
    expect(decideMetricsAccess(request({ peer: "10.0.0.2", forwardedFor: "127.0.0.1", trustProxy: false }))).toMatchObject({ status: 403 });
    expect(decideMetricsAccess(request({ peer: "127.0.0.1", forwardedFor: null, trustProxy: true }))).toEqual({ allowed: true });
  });

  test("an Authorization header changes nothing", () => {
    expect(decideMetricsAccess(request({ peer: "10.0.0.1", authorization: `Bearer ${TOKEN}` }))).toMatchObject({ status: 403 });
  });
});

describe("with a token", () => {
  test("the right bearer token is answered from any address", () => {
    for (const peer of ["10.0.0.1", "127.0.0.1", null]) {
      expect(decideMetricsAccess(request({ token: TOKEN, peer, authorization: `Bearer ${TOKEN}` }))).toEqual({ allowed: true });
    }
    expect(decideMetricsAccess(request({ token: TOKEN, authorization: `bearer  ${TOKEN}` }))).toEqual({ allowed: true });
  });

  test("no token, another token, a prefix of it or another scheme get 401, from loopback too", () => {
    for (const authorization of [null, "", `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${btoa(`u:${TOKEN}`)}`, TOKEN, `Bearer ${TOKEN} extra`]) {
      const decision = decideMetricsAccess(request({ token: TOKEN, authorization }));
      expect({ authorization, status: (decision as { status?: number }).status }).toEqual({ authorization, status: 401 });
    }
  });
});

test("isLoopback refuses what is not an address", () => {
  for (const text of ["localhost", "127.1", "0x7f000001", "127.0.0.1:80", "::2"]) expect({ text, loopback: isLoopback(text) }).toEqual({ text, loopback: false });
});
