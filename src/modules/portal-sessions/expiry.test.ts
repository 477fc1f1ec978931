/**
 * A portal session's life by a clock the test moves, on every store backend: its token works until `expires_at`
 * and is refused from then on, its page stops being frameable and says "expired", and the sweep removes it a week
 * later. The end-to-end tests cannot wait the minute a session lasts at least.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { buildHandler } from "../../http/app.ts";
import { loadConfig } from "../../config.ts";
import { manualClock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/log.ts";
import type { Store } from "../../store/index.ts";
import { createOrganization } from "../organizations/onboarding.ts";
import { uiHandler } from "../../ui/routes.ts";
import { startEventSweep } from "../events/sweep.ts";
import { PORTAL_SESSION_RETENTION_MS } from "./service.ts";
import { storeBackends } from "../../../test/store/backends.ts";

const KEY = "portal-expiry-key";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

for (const backend of storeBackends()) {
  describe(`${backend.name}: a portal session and the clock`, () => {
    let store: Store;
    let clock: ReturnType<typeof manualClock>;
    let api: ReturnType<typeof buildHandler>;
    let pages: ReturnType<typeof uiHandler>;

    beforeEach(async () => {
      store = await backend.open();
      clock = manualClock();
      await createOrganization(store, "com.example.expiry", KEY, clock.now());
      const { config } = loadConfig({}, []);
      api = buildHandler({ store, config, clock, log: quiet, version: "test", nudge: () => {} });
      pages = uiHandler({ isStopping: () => false, log: quiet, portal: { store, clock } });
    });
    afterEach(async () => store.close());

    const call = async (method: string, path: string, key = KEY, body?: unknown) => {
      const headers: Record<string, string> = { "x-api-key": key, accept: "application/json" };
      if (body !== undefined) headers["content-type"] = "application/json";
      const response = await api(new Request(`http://localhost${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
      return { status: response.status, body: (await response.json().catch(() => undefined)) as any };
    };
    const page = (path: string) => pages(new Request(`http://localhost${path}`)) as Promise<Response>;

    test("works until expires_at, is refused from then on, and is swept a week later", async () => {
      const queue = (await call("POST", "/v1/queues", KEY, { name: "q" })).body.queue.id;
      const made = await call("POST", "/v1/portal_sessions", KEY, { queue_id: queue, expires_in: 60, allowed_origins: ["https://app.example.com"] });
      expect(made.status).toBe(201);
      const { id, url } = made.body.portal_session;
      const token = url.split("#")[1];
      clock.advance(59_999);
      expect((await call("GET", `/v1/queues/${queue}/listeners`, token)).status).toBe(200);
      expect((await page(`/portal/${id}`)).headers.get("content-security-policy")).toContain("frame-ancestors https://app.example.com");
      clock.advance(1);
      expect((await call("GET", `/v1/queues/${queue}/listeners`, token)).status).toBe(401);
      expect((await call("GET", `/v1/portal_sessions/${id}`)).body.portal_session.status).toBe("expired");
      expect(await (await page(`/portal/${id}/session`)).json()).toMatchObject({ status: "expired" });
      expect((await page(`/portal/${id}`)).headers.get("content-security-policy")).toContain("frame-ancestors 'none'");

      clock.set(made.body.portal_session.expires_at + PORTAL_SESSION_RETENTION_MS);
      await startEventSweep(store, clock, quiet)();
      expect((await call("GET", `/v1/portal_sessions/${id}`)).status).toBe(200);
      clock.advance(1);
      await startEventSweep(store, clock, quiet)();
      expect((await call("GET", `/v1/portal_sessions/${id}`)).status).toBe(404);
      expect((await page(`/portal/${id}/session`)).status).toBe(404);
    });
  });
}
