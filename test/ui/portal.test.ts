/**
 * The portal in a real browser (docs/portal.md): a page of another origin embeds a portal link in a frame; the
 * customer adds a listener, sends a test message that a receiver on 127.0.0.1 gets signed, sees the attempt,
 * rotates the secret, replays a missed message and changes a setting; a page of an origin the session does not
 * allow cannot frame it (the browser refuses it by the page's Content-Security-Policy); a view-only link shows no
 * control that writes; a revoked link turns into a clear page with the way back. Screenshots of each view at
 * phone and desktop width go to a folder the test prints. The steps build on each other, in order.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Frame } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { waitFor } from "../e2e/harness.ts";
import { ok, status, type Receiver } from "../e2e/receiver.ts";
import { browserSuite, DESKTOP, PHONE } from "./browser.ts";
import { browserForFile, UI_WAIT } from "./suite.ts";

const ENV = { FANOUT_RETRY_SCHEDULE: "1s,4s", FANOUT_LIVENESS_INTERVAL: "300ms", FANOUT_DELIVERY_TIMEOUT: "1s" };
const LOGO = `data:image/svg+xml;base64,${btoa('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#0f766e"/><path d="M8 20l8-10 8 10z" fill="#fff"/></svg>')}`;

/** A page of its own origin (another port of 127.0.0.1) that frames `src`, as an organization's site would. */
function embedder() {
  let src = "";
  const server = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    fetch: () => new Response(
      `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1"><title>Acme account</title></head>
      <body style="margin:0;font-family:system-ui"><header style="padding:12px 16px;background:#0b1f33;color:#fff">Acme · Your account · Webhooks</header>
      <iframe id="portal" title="Webhooks" src="${src}" style="display:block;width:100%;height:600px;border:0"></iframe>
      <script>addEventListener("message", (e) => { if (e.data && e.data.fanout === "portal-height") document.getElementById("portal").style.height = e.data.height + "px"; });</script>
      </body></html>`,
      { headers: { "content-type": "text/html;charset=utf-8" } },
    ),
  });
  return { origin: `http://127.0.0.1:${server.port}`, show: (url: string) => void (src = url), stop: () => server.stop(true) };
}

/** What the page keeps of a session's token: in sessionStorage, or "blocked" where the browser gives it none. */
const storedToken = (id: string) =>
  `(() => { let token; try { token = sessionStorage.getItem("fanout.portal.${id}"); } catch { token = "blocked"; } return { token, cookie: document.cookie }; })()`;

browserSuite()("the portal in a browser", () => {
  const ui = browserForFile(ENV);
  const { fanout, page, api } = ui;
  let receiver: Receiver;
  let customer: Receiver;
  const allowed = embedder();
  const refused = embedder();
  const ids = { queue: "", existing: "", other: "", session: "", url: "", added: "", secret: "", missed: "" };

  beforeAll(async () => {
    [receiver, customer] = [await ui.receiver(), await ui.receiver()];
    ids.queue = await api.queue("shipments");
    ids.existing = (await api.listener(ids.queue, "acme-prod", receiver)).id;
    ids.other = (await api.listener(ids.queue, "another-customer", receiver)).id;
    // One message missed by acme-prod, to replay from the portal.
    receiver.answer("/notify", status(500));
    ids.missed = await api.publish(ids.queue, { parcel: "P-1" }, "parcel.delayed");
    await api.settled(ids.queue, ids.missed, ids.existing, "missed", UI_WAIT);
    receiver.answer("/notify", ok);
    const made = await api.call("POST", "/v1/portal_sessions", {
      queue_id: ids.queue, listener_ids: [ids.existing], allowed_origins: [allowed.origin], return_url: "https://acme.example/account",
      branding: { name: "Acme Shipping", logo_url: LOGO, accent: "#0f766e" },
    }, 201);
    ids.session = made.portal_session.id;
    ids.url = made.portal_session.url;
  }, 120_000);
  afterAll(() => {
    allowed.stop();
    refused.stop();
  });

  const frame = (): Frame => page().frames().find((f) => f.url().includes("/portal/"))!;
  const see = (selector: string, hasText?: string | RegExp) =>
    frame().locator(selector, hasText === undefined ? {} : { hasText }).first().waitFor({ timeout: UI_WAIT });
  const card = (name: string) => frame().locator(`[data-listener="${name}"]`).first();

  const painted = (f: Frame) => f.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))");

  /**
   * The embedding page at each width, its frame grown to the portal's height (the portal tells it). The frame is
   * another site's, drawn by another process, so the viewport is made as tall as the page instead of asking for a
   * full-page capture, which would catch the frame before it repaints.
   */
  async function shoot(name: string): Promise<void> {
    for (const [size, viewport] of [["phone", PHONE], ["desktop", DESKTOP]] as const) {
      await page().setViewportSize(viewport);
      await waitFor(async () => {
        const inner = await frame().evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)");
        return inner === (await page().evaluate("document.getElementById('portal').offsetHeight"));
      }, UI_WAIT, () => "the frame never took the portal's height");
      const overflow = await frame().evaluate("document.documentElement.scrollWidth - window.innerWidth");
      expect({ view: name, size, overflow }).toEqual({ view: name, size, overflow: 0 });
      const height = (await page().evaluate("document.documentElement.scrollHeight")) as number;
      await page().setViewportSize({ width: viewport.width, height: Math.max(viewport.height, height) });
      await painted(frame());
      await painted(page().mainFrame());
      await page().screenshot({ path: join(ui.shots(), `portal-${name}-${size}.png`) });
    }
    await page().setViewportSize(DESKTOP);
  }

  test("an allowed origin frames the portal: branded, the session's listeners only, the token out of the address bar", async () => {
    allowed.show(ids.url);
    await page().goto(allowed.origin);
    await waitFor(() => page().frames().some((f) => f.url().includes("/portal/")), UI_WAIT, () => "the portal frame never loaded");
    await see(".portal-brand", "Acme Shipping");
    await see('[data-listener="acme-prod"]');
    expect(await frame().locator('[data-listener="another-customer"]').count()).toBe(0);
    expect(frame().url()).toBe(`${fanout().url}/portal/${ids.session}`);
    // This browser, like many, gives a frame of another site no storage: the token then lives in the page alone.
    expect(await frame().evaluate(storedToken(ids.session))).toEqual({ token: "blocked", cookie: "" });
    expect(await frame().evaluate(`getComputedStyle(document.documentElement).getPropertyValue("--accent").trim()`)).toBe("#0f766e");
    await see('[data-listener="acme-prod"] .stat-bad', "1");
    await shoot("listeners");
  });

  test("the customer adds a listener, which joins the session", async () => {
    await frame().fill("input[name=listener-name]", "acme-staging");
    await frame().fill("input[name=notify-url]", customer.notifyUrl);
    await frame().fill("input[name=liveness-url]", customer.livenessUrl);
    await frame().getByRole("button", { name: "Add listener" }).click();
    await see(".notice-ok", "Listener acme-staging added");
    ids.secret = (await frame().locator(".notice-ok .secret").textContent())!.trim();
    await see('[data-listener="acme-staging"] .badge', "Stable");
    const session = (await api.call("GET", `/v1/portal_sessions/${ids.session}`)).portal_session;
    ids.added = session.listener_ids.find((id: string) => id !== ids.existing);
    expect(session.listener_ids).toEqual([ids.existing, ids.added]);
    const events = (await api.call("GET", "/v1/events?events=listeners")).events;
    expect(events.find((e: any) => e.listener.id === ids.added)).toMatchObject({ type: "listener_added", api_key: null, portal_session: { id: ids.session } });
  });

  test("sends a test message that the receiver gets signed, and sees the attempt", async () => {
    await card("acme-staging").getByRole("button", { name: "Send a test message" }).click();
    await see('[data-listener="acme-staging"] .notice-ok', "Test message sent");
    const [got] = await customer.waitForDeliveries(1, UI_WAIT);
    const verified = new Webhook(ids.secret).verify(got!.body, got!.headers) as { name: string; data: { test: boolean } };
    expect(verified).toMatchObject({ name: "fanout.test", data: { test: true } });
    await card("acme-staging").locator(".delivery-summary", { hasText: "fanout.test" }).click();
    await see('[data-listener="acme-staging"] .attempt .badge', "200");
    await see('[data-listener="acme-staging"] .attempt-response', "ok");
    // The item's summary agrees with the attempt it shows.
    await see('[data-listener="acme-staging"] .delivery-summary', /Acknowledged.*1 attempt/);
    await see('[data-listener="acme-staging"] .stat', /^1\s*acknowledged/);
    await shoot("test-message");
  });

  test("reveals and rotates the signing secret", async () => {
    page().once("dialog", (d) => void d.accept());
    await card("acme-staging").getByRole("button", { name: "Signing secret" }).click();
    await card("acme-staging").getByRole("button", { name: "Reveal" }).click();
    await see('[data-listener="acme-staging"] [data-secret="current"]', ids.secret);
    await card("acme-staging").getByRole("button", { name: "Rotate…" }).click();
    await see('[data-listener="acme-staging"] .notice-ok', "Rotated");
    const rotated = await api.call("GET", `/v1/queues/${ids.queue}/listeners/${ids.added}/secret`);
    expect(rotated.previous_secret).toBe(ids.secret);
    await see('[data-listener="acme-staging"] [data-secret="current"]', rotated.secret);
    await shoot("secret-rotated");
  });

  test("replays the missed message to its listener; its opened attempts stay open and show the new cycle", async () => {
    const before = receiver.deliveries().length;
    // Opened before the replay: the list's next poll brings the new cycle into the same item, not a closed one.
    await card("acme-prod").locator(".delivery-summary", { hasText: "parcel.delayed" }).click();
    await see('[data-listener="acme-prod"] .attempt .badge', "500");
    await card("acme-prod").getByRole("button", { name: "Replay…" }).click();
    await card("acme-prod").getByRole("button", { name: "Replay", exact: true }).click();
    await see('[data-listener="acme-prod"] .notice-ok', "Replay started: 1 message will be delivered again.");
    await api.settled(ids.queue, ids.missed, ids.existing, "acknowledged", UI_WAIT);
    expect(receiver.deliveries().length).toBeGreaterThan(before);
    await see('[data-listener="acme-prod"] .attempt', "cycle 2");
    expect(await card("acme-prod").locator(".delivery-summary", { hasText: "parcel.delayed" }).getAttribute("aria-expanded")).toBe("true");
    const replay = (await api.call("GET", "/v1/events?events=listeners")).events.find((e: any) => e.type === "listener_replayed");
    expect(replay).toMatchObject({ api_key: null, portal_session: { id: ids.session } });
  });

  test("edits a listener: its filter, counted over what it received, and its pace; a refusal is shown as the API's", async () => {
    // A message to another customer's listener only: the queue holds three, this customer's listeners got two.
    await api.call("POST", `/v1/queues/${ids.queue}/listeners/${ids.other}/test`, undefined, 202);
    await card("acme-staging").getByRole("button", { name: "Settings…" }).click();
    await card("acme-staging").locator("textarea[name=filter-names]").fill("parcel.*");
    await see('[data-listener="acme-staging"] .filter-trial', "Would receive 1 of the last 2 messages.");
    await card("acme-staging").getByRole("button", { name: "Save filter" }).click();
    await see('[data-listener="acme-staging"] .notice-ok', "Filter saved");
    await card("acme-staging").getByRole("button", { name: "Edit…" }).click();
    await card("acme-staging").locator("input[name=edit-rate-limit]").fill("5");
    await card("acme-staging").getByRole("button", { name: "Save", exact: true }).click();
    await see('[data-listener="acme-staging"] .notice-ok', "Saved.");
    expect(await api.listenerView(ids.queue, ids.added)).toMatchObject({ rate_limit: 5, filter: { names: ["parcel.*"] } });
    await shoot("settings");
    await card("acme-staging").locator("input[name=edit-name]").fill("self");
    await card("acme-staging").getByRole("button", { name: "Save", exact: true }).click();
    await see('[data-listener="acme-staging"] [role=alert]', "/name");
  });

  test("a page of another origin cannot frame it: the browser refuses by the page's policy", async () => {
    const before = ui.browser().problems.length;
    const refusals: string[] = [];
    const onConsole = (m: { text(): string }) => void (/frame-ancestors/.test(m.text()) && refusals.push(m.text()));
    page().on("console", onConsole);
    refused.show(ids.url);
    await page().goto(refused.origin);
    await waitFor(() => refusals.length > 0, UI_WAIT, () => "the browser did not report the refused frame");
    page().off("console", onConsole);
    const framed = page().frames().filter((f) => f !== page().mainFrame());
    for (const f of framed) expect(await f.locator(".portal-bar").count().catch(() => 0)).toBe(0);
    expect(refusals[0]).toContain("frame-ancestors");
    // The refusal is the point of this step, not a fault of the page.
    ui.browser().problems.splice(before);
  });

  test("opened on its own, the link keeps its token in the tab's sessionStorage, out of the address bar", async () => {
    const made = await api.call("POST", "/v1/portal_sessions", { queue_id: ids.queue, listener_ids: [ids.existing] }, 201);
    await page().goto(made.portal_session.url);
    await page().locator('[data-listener="acme-prod"]').waitFor({ timeout: UI_WAIT });
    expect(page().url()).toBe(`${fanout().url}/portal/${made.portal_session.id}`);
    expect(await page().evaluate(storedToken(made.portal_session.id))).toEqual({ token: made.portal_session.url.split("#")[1], cookie: "" });
    await page().reload();
    await page().locator('[data-listener="acme-prod"]').waitFor({ timeout: UI_WAIT });
  });

  test("a view-only link shows its listeners and deliveries, and no control that writes", async () => {
    const made = await api.call("POST", "/v1/portal_sessions", { queue_id: ids.queue, can_manage: false, allowed_origins: [allowed.origin] }, 201);
    allowed.show(made.portal_session.url);
    await page().goto(allowed.origin);
    await waitFor(() => page().frames().some((f) => f.url().includes(made.portal_session.id)), UI_WAIT, () => "the view-only portal never loaded");
    await see(".page-sub", "view only");
    await see('[data-listener="another-customer"]');
    await see('[data-listener="acme-staging"] .delivery-summary', "fanout.test");
    for (const name of ["Add listener", "Pause", "Delete", "Replay…", "Settings…", "Send a test message", "Signing secret", "Edit…"]) {
      expect({ name, count: await frame().getByRole("button", { name, exact: true }).count() }).toEqual({ name, count: 0 });
    }
    await shoot("view-only");
  });

  test("a revoked link turns into a clear page with the way back", async () => {
    allowed.show(ids.url);
    await page().goto(allowed.origin);
    await see('[data-listener="acme-prod"]');
    await api.call("DELETE", `/v1/portal_sessions/${ids.session}`);
    await see(".portal-ended h1", "This link was revoked");
    expect(await frame().locator(".portal-ended a").getAttribute("href")).toBe("https://acme.example/account");
    await see(".portal-brand", "Acme Shipping");
    await shoot("revoked");
    // Opened again, the revoked link may no longer be framed at all; opened on its own it says the same.
    await page().goto(ids.url);
    await page().locator(".portal-ended h1", { hasText: "This link was revoked" }).waitFor({ timeout: UI_WAIT });
    expect(await page().evaluate(storedToken(ids.session))).toEqual({ token: null, cookie: "" });
    await page().goto(`${fanout().url}/portal/ps_unknown`);
    await page().locator(".portal-ended h1", { hasText: "This link is not valid" }).waitFor({ timeout: UI_WAIT });
    expect(ui.browser().problems).toEqual([]);
  });
});
