/**
 * The gate behind the front door, in process through the server's handler, without a socket: lockout by the
 * peer address that server.ts hands over, one key lookup per request, and which paths it guards. The end-to-end suite covers the same over HTTPS.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { buildHandler, type Deps } from "./app.ts";
import { loadConfig } from "../config.ts";
import { manualClock } from "../lib/clock.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { createOrganization } from "../modules/organizations/onboarding.ts";
import { tempFolder } from "../../test/support/temp.ts";

const KEY = "gate-test-key";
let store: SqliteStore;
let lookups: number;

beforeEach(async () => {
  store = openSqliteStore(join(tempFolder("fanout-gate-"), "gate.db"), { durability: "normal" });
  await createOrganization(store, "com.example.gate", KEY, 0);
  lookups = 0;
  const authenticate = store.apiKeys.authenticate.bind(store.apiKeys);
  store.apiKeys.authenticate = (hash) => (lookups++, authenticate(hash));
});
afterEach(async () => store.close());

/** A handler whose requests come from the peer named in a test-only header, as server.ts would report it. */
function appWith(env: Record<string, string>, peer: Deps["peerAddress"] = (r) => r.headers.get("x-test-peer")) {
  const clock = manualClock();
  const { config } = loadConfig({ FANOUT_LOCKOUT: "2/1m:10s", ...env }, []);
  const app = buildHandler({ store, config, clock, log: { info() {}, warn() {}, error() {} }, version: "test", nudge() {}, peerAddress: peer });
  const call = async (path: string, opts: { key?: string | null; peer?: string; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(opts.peer ? { "x-test-peer": opts.peer } : {}), ...opts.headers };
    if (opts.key !== null) headers["x-api-key"] = opts.key ?? KEY;
    return (await app(new Request(`http://localhost${path}`, { headers }))).status;
  };
  return { call, clock };
}

describe("request gate", () => {
  test("locks the socket peer address; X-Forwarded-For is ignored unless trusted", async () => {
    const { call, clock } = appWith({});
    const spoof = { "x-forwarded-for": "10.9.9.9" };
    for (let i = 0; i < 2; i++) expect(await call("/v1/queues", { peer: "10.0.0.1", key: "bad-key-1", headers: spoof })).toBe(401);
    expect(await call("/v1/queues", { peer: "10.0.0.1" })).toBe(403);
    expect(await call("/v1/queues", { peer: "::ffff:10.0.0.1" })).toBe(403);
    expect(await call("/v1/queues", { peer: "10.0.0.2", headers: spoof })).toBe(200);
    clock.advance(10_000);
    expect(await call("/v1/queues", { peer: "10.0.0.1" })).toBe(200);
  });

  test("with --trust-proxy the forwarded address counts, not the proxy's", async () => {
    const { call } = appWith({ FANOUT_TRUST_PROXY: "on" });
    for (let i = 0; i < 2; i++) expect(await call("/v1/queues", { peer: "10.0.0.1", key: null, headers: { "x-forwarded-for": "192.0.2.7" } })).toBe(401);
    expect(await call("/v1/queues", { peer: "10.0.0.1", headers: { "x-forwarded-for": "192.0.2.7" } })).toBe(403);
    expect(await call("/v1/queues", { peer: "10.0.0.1", headers: { "x-forwarded-for": "192.0.2.8" } })).toBe(200);
  });

  test("without a peer address every client is one address (fails closed)", async () => {
    const { call } = appWith({}, () => undefined);
    for (let i = 0; i < 2; i++) expect(await call("/v1/queues", { peer: `10.0.0.${i}`, key: null })).toBe(401);
    expect(await call("/v1/queues", { peer: "10.0.0.9" })).toBe(403);
  });

  test("looks the key up once per request, and guards /v1 paths but the API description", async () => {
    const { call } = appWith({});
    expect(await call("/v1/queues", { peer: "10.0.0.1" })).toBe(200);
    expect(lookups).toBe(1);
    expect(await call("/v1/nowhere", { peer: "10.0.0.1", key: null })).toBe(401);
    expect(await call("/v1/openapi.json", { peer: "10.0.0.1", key: null })).toBe(200);
    expect(await call("/healthz", { peer: "10.0.0.1", key: null })).toBe(200);
  });
});
