/**
 * The dashboard in a real browser, against the real server (HTTPS, self-signed) and a real receiver on
 * 127.0.0.1: a wrong key, sign-in, a queue and a listener made through the UI, a test message published and seen
 * acknowledged, pause and resume, redeliver, replay, usage events and API keys; then every view at phone and
 * desktop size, saved as screenshots in a folder the test prints. The steps build on each other, in order.
 */
import { beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { waitFor } from "../e2e/harness.ts";
import { ok, status, type Receiver } from "../e2e/receiver.ts";
import { browserSuite, DESKTOP, PHONE } from "./browser.ts";
import { browserForFile, UI_WAIT } from "./suite.ts";

// A delivery is missed about 5 s after its message (the schedule's sum), whether it failed or was held: long
// enough to resume a paused listener through the UI, short enough to wait for a missed one.
const ENV = { FANOUT_RETRY_SCHEDULE: "1s,4s", FANOUT_LIVENESS_INTERVAL: "300ms", FANOUT_DELIVERY_TIMEOUT: "1s" };

browserSuite()("dashboard in a browser", () => {
  const ui = browserForFile(ENV);
  const { fanout, page, url, api, see, submitKey } = ui;
  let receiver: Receiver;
  const ids = { queue: "", listener: "", message: "", last: "" };

  beforeAll(async () => {
    receiver = await ui.receiver();
  });

  const card = (listener: string) => page().locator(`[data-listener="${listener}"]`).first();
  const deliveriesOf = (message: string) => receiver.deliveries().filter((d) => JSON.parse(d.body).id === message);

  /** Both sizes, the whole page; the sign-in page has no navigation, and the last step checks that views fit. */
  async function shoot(name: string): Promise<void> {
    for (const [size, viewport] of [["phone", PHONE], ["desktop", DESKTOP]] as const) {
      await page().setViewportSize(viewport);
      await page().screenshot({ path: join(ui.shots(), `${name}-${size}.png`), fullPage: true });
    }
    await page().setViewportSize(DESKTOP);
  }

  test("a wrong key is refused and the API's error is shown", async () => {
    await page().goto(url("/"));
    await submitKey("not-a-key-of-this-server");
    await see("[role=alert]", "Unauthorized");
    const alert = await page().locator("[role=alert]").textContent();
    expect(alert).toContain("Sign-in failed: Unauthorized (401)");
    expect(alert).toContain("The API key is unknown or disabled.");
    expect(await page().evaluate("sessionStorage.length")).toBe(0);
    await shoot("sign-in-wrong-key");
  });

  test("signs in with the owner key, which is kept in sessionStorage only", async () => {
    await submitKey(fanout().key);
    await see("h1", "Queues");
    await see(".empty", "No queues yet");
    // Evaluated in the page (a string, as this project's types know no DOM).
    const stored = await page().evaluate(`({ session: sessionStorage.getItem("fanout.apiKey"), local: localStorage.length, cookie: document.cookie })`);
    expect(stored).toEqual({ session: fanout().key, local: 0, cookie: "" });
  });

  test("creates a queue", async () => {
    await page().fill("input[name=queue-name]", "orders");
    await page().getByRole("button", { name: "Create queue" }).click();
    await see("h1", "orders");
    ids.queue = page().url().split("/ui/queues/")[1]!;
    expect((await api.call("GET", `/v1/queues/${ids.queue}`)).queue.name).toBe("orders");
    await see(".empty", "No listeners on this queue yet");
  });

  test("adds a listener and shows it stable", async () => {
    await page().fill("input[name=listener-name]", "billing");
    await page().fill("input[name=notify-url]", receiver.notifyUrl);
    await page().fill("input[name=liveness-url]", receiver.livenessUrl);
    await page().getByRole("button", { name: "Add listener" }).click();
    await see(".notice-ok", "Listener billing added");
    await see('[data-listener="billing"] .badge', "Stable");
    const [listener] = (await api.call("GET", `/v1/queues/${ids.queue}/listeners`)).listeners;
    expect(listener).toMatchObject({ name: "billing", notify_url: receiver.notifyUrl, liveness_url: receiver.livenessUrl });
    ids.listener = listener.id;
  });

  test("publishes a test message and watches it become acknowledged", async () => {
    await page().getByRole("link", { name: "Publish" }).click();
    await page().fill("input[name=message-name]", "first test");
    await page().fill("textarea[name=message-data]", '{"order": 42, "items": ["tea"]}');
    await page().getByRole("button", { name: "Publish", exact: true }).click();
    await see(".notice-ok", "Published");
    await page().getByRole("link", { name: "Follow its deliveries →" }).click();
    await see('tr[data-listener="billing"] .badge', "Acknowledged");
    const [delivered] = await receiver.waitForDeliveries(1);
    const body = JSON.parse(delivered!.body);
    expect(body).toMatchObject({ name: "first test", data: { order: 42, items: ["tea"] } });
    ids.message = body.id;
    expect(page().url()).toEndWith(`/ui/queues/${ids.queue}/messages/${ids.message}`);
  });

  test("data refused by the queue's schema shows the API's error with every failing path", async () => {
    const schema = { order: { type: "number", min: 1 }, email: { type: "string", pattern: "^[^@]+@[^@]+$" } };
    const typed = (await api.call("POST", "/v1/queues", { name: "typed", schema })).queue.id;
    await page().goto(url(`/queues/${typed}/publish`));
    expect(JSON.parse(await page().inputValue("textarea[name=message-data]"))).toEqual({ order: 1, email: "user@example.com" });
    await page().fill("textarea[name=message-data]", '{"order": 0, "email": "nobody"}');
    await page().getByRole("button", { name: "Publish", exact: true }).click();
    await see("[role=alert]", "Unprocessable Entity (422)");
    const alert = (await page().locator("[role=alert]").textContent())!;
    expect(alert).toContain("The message was not published");
    expect(alert).toContain("/data/order must be at least 1");
    expect(alert).toContain("/data/email must match the pattern");
    expect((await api.call("GET", `/v1/queues/${typed}/messages`)).messages).toEqual([]);
    await shoot("publish-refused");
    await page().fill("textarea[name=message-data]", "{not json");
    await page().getByRole("button", { name: "Publish", exact: true }).click();
    await see("[role=alert]", "Check the data");
    await api.call("DELETE", `/v1/queues/${typed}`);
  });

  test("pauses and resumes the listener", async () => {
    await page().goto(url(`/queues/${ids.queue}`));
    await card("billing").getByRole("button", { name: "Pause" }).click();
    await see('[data-listener="billing"] .badge', "Paused");
    await see('[data-listener="billing"] .paused-note');
    expect((await api.listenerView(ids.queue, ids.listener)).enabled).toBe(false);
    await shoot("listeners-paused");
    const held = await api.publish(ids.queue, { while: "paused" });
    // Claimed, then held at once: the delivery waits, pending without a due time.
    await waitFor(async () => {
      const d = (await api.message(ids.queue, held)).deliveries[0];
      return d?.state === "pending" && d.next_attempt_at === null;
    }, UI_WAIT, () => "the message published while paused was not held");
    await card("billing").getByRole("button", { name: "Resume" }).click();
    await card("billing").locator(".badge", { hasText: "Paused" }).waitFor({ state: "detached", timeout: UI_WAIT });
    expect((await api.listenerView(ids.queue, ids.listener)).enabled).toBe(true);
    await waitFor(() => deliveriesOf(held).length > 0, UI_WAIT, () => "the message held while paused was not sent after resuming");
  });

  test("redelivers a message to its listener", async () => {
    await page().goto(url(`/queues/${ids.queue}/messages/${ids.message}`));
    await see('tr[data-listener="billing"] .badge', "Acknowledged");
    const before = deliveriesOf(ids.message).length;
    await page().locator('tr[data-listener="billing"]').getByRole("button", { name: "Redeliver" }).click();
    await see(".notice-ok", "Redelivery started to 1 listener.");
    await waitFor(() => deliveriesOf(ids.message).length > before, UI_WAIT, () => "the redelivery never reached the receiver");
    await see(".attempts tbody tr:nth-child(2)");
    await see(".attempts td", "cycle 2");
  });

  test("replays a missed message to the listener", async () => {
    receiver.answer("/notify", status(500));
    const missed = await api.publish(ids.queue, { will: "be missed" }, "missed one");
    await api.settled(ids.queue, missed, ids.listener, "missed", UI_WAIT);
    receiver.answer("/notify", ok);
    await page().goto(url(`/queues/${ids.queue}`));
    const missedCount = (await api.listenerView(ids.queue, ids.listener)).messages.missed_count;
    expect(missedCount).toBeGreaterThan(0);
    await see('[data-listener="billing"] .stat-bad', String(missedCount));
    await card("billing").getByRole("button", { name: "Replay…" }).click();
    // A window that starts a second after the missed message replays nothing; the form's default (the last hour)
    // replays it. The time is written as the browser's local time, as the form reads it.
    const since = card("billing").locator("input[name=replay-since]");
    const lastHour = await since.inputValue();
    const createdAt: number = (await api.message(ids.queue, missed)).created_at;
    await since.fill(await page().evaluate(`(() => { const ms = ${createdAt + 1000}; return new Date(ms - new Date(ms).getTimezoneOffset() * 60000).toISOString().slice(0, 19); })()`));
    await card("billing").getByRole("button", { name: "Replay", exact: true }).click();
    await see(".notice-ok", "Nothing to replay: no missed message to billing was created in that window.");
    await since.fill(lastHour);
    await card("billing").getByRole("button", { name: "Replay", exact: true }).click();
    await see(".notice-ok", "Replay started: 1 message will be delivered again.");
    await api.settled(ids.queue, missed, ids.listener, "acknowledged", UI_WAIT);
  });

  test("shows the usage events of what was done", async () => {
    await page().getByRole("link", { name: "Events" }).click();
    await see("h1", "Usage events");
    for (const type of ["queue added", "listener added", "message added"]) await see(".events .badge", type);
  });

  test("the owner key manages API keys; another key is told it cannot, and is signed out once disabled", async () => {
    await page().getByRole("link", { name: "API keys" }).click();
    await see("td .badge", "Owner");
    await page().fill("input[name=key-name]", "ci-publisher");
    await page().getByRole("button", { name: "Create key" }).click();
    await see(".notice-ok", "Key created");
    const secret = (await page().locator(".notice-ok .secret").textContent())!.trim();
    expect(secret).toStartWith("fo_");
    await see('tr[data-key="ci-publisher"] .badge', "Enabled");

    await page().getByRole("button", { name: "Sign out" }).click();
    await submitKey(secret);
    await page().getByRole("link", { name: "API keys" }).click();
    await see(".empty", "This key cannot manage API keys.");
    await shoot("keys-not-allowed");

    // A key disabled while in use ends the session, and the sign-in page says why.
    const created = (await api.call("GET", "/v1/api_keys")).api_keys.find((k: { name: string }) => k.name === "ci-publisher");
    await api.call("PUT", `/v1/api_keys/${created.id}`, { status: "disabled" });
    await see(".notice-warn", "You were signed out: Unauthorized — The API key is unknown or disabled.");
    expect(await page().evaluate("sessionStorage.length")).toBe(0);
    await submitKey(fanout().key);
    await see("td .badge", "Owner");
  });

  test("a listener that is down shows so; redeliver to one listener of two sends to that one only", async () => {
    const failing = (await ui.receiver()).answer("/live", status(503)).answer("/notify", status(503));
    const down = await api.listener(ids.queue, "audit-log", { notifyUrl: failing.notifyUrl, livenessUrl: failing.livenessUrl });
    await page().goto(url(`/queues/${ids.queue}`));
    await see('[data-listener="audit-log"] .badge', "Down");
    for (let i = 1; i <= 3; i++) ids.last = await api.publish(ids.queue, { order: 100 + i, total: 9.5 * i }, `order ${100 + i}`);
    await api.settled(ids.queue, ids.last, down.id, "missed", UI_WAIT);
    await api.settled(ids.queue, ids.last, ids.listener, "acknowledged", UI_WAIT);
    await page().goto(url(`/queues/${ids.queue}/messages/${ids.last}`));
    await see('tr[data-listener="audit-log"] .badge', "Missed");
    await page().locator('tr[data-listener="billing"]').getByRole("button", { name: "Redeliver" }).click();
    await see(".notice-ok", "Redelivery started to 1 listener.");
    await waitFor(() => deliveriesOf(ids.last).length === 2, UI_WAIT, () => "billing did not get the message again");
    expect(failing.deliveries()).toEqual([]);
  });

  test("every view fits a phone and a desktop; screenshots of each", async () => {
    const views = await moreViews();
    for (const [size, viewport] of [["phone", PHONE], ["desktop", DESKTOP]] as const) {
      await page().setViewportSize(viewport);
      for (const [name, path, ready] of views) {
        await page().goto(url(path));
        await see(ready);
        const overflow = await page().evaluate("document.documentElement.scrollWidth - window.innerWidth");
        expect({ view: name, size, overflow }).toEqual({ view: name, size, overflow: 0 });
        await page().screenshot({ path: join(ui.shots(), `${name}-${size}.png`), fullPage: true });
      }
    }
    // The dark scheme follows the system's; two views show it.
    await page().emulateMedia({ colorScheme: "dark" });
    for (const [name, path, ready] of views.filter(([n]) => n === "listeners" || n === "message")) {
      await page().goto(url(path));
      await see(ready);
      await page().screenshot({ path: join(ui.shots(), `${name}-desktop-dark.png`), fullPage: true });
    }
    await page().emulateMedia({ colorScheme: "light" });
    expect(ui.browser().problems).toEqual([]);
  }, 120_000);

  /** Every view to look at, with a queue that has a schema and none of the listeners yet. */
  async function moreViews(): Promise<[name: string, path: string, ready: string][]> {
    const schema = { order: { type: "number", min: 1 }, customer: { type: "object", props: { email: { type: "string", pattern: "^[^@]+@[^@]+$" } } }, tags: { type: "array", items: { type: "string" }, required: false } };
    const typed = (await api.call("POST", "/v1/queues", { name: "invoices", schema })).queue.id;
    return [
      ["queues", "/queues", "table"],
      ["listeners", `/queues/${ids.queue}`, '[data-listener="audit-log"] .badge-bad'],
      ["messages", `/queues/${ids.queue}/messages`, ".table-stack"],
      ["message", `/queues/${ids.queue}/messages/${ids.last}`, 'tr[data-listener="audit-log"] .badge-bad'],
      ["message-redelivered", `/queues/${ids.queue}/messages/${ids.message}`, ".attempts tbody tr:nth-child(2)"],
      ["publish", `/queues/${typed}/publish`, "textarea[name=message-data]"],
      ["schema", `/queues/${typed}/schema`, ".json"],
      ["empty-queue", `/queues/${typed}`, ".empty"],
      ["events", "/events", ".events"],
      ["keys", "/keys", 'tr[data-key="ci-publisher"]'],
      ["not-found", "/no/such/view", ".empty"],
    ];
  }
});
