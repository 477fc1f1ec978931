/**
 * Listener filters, headers and the events queue in the dashboard, in a real browser against the real server and
 * real receivers on 127.0.0.1: a filter tried (its count before saving, an invalid one's error by path) and saved,
 * then only matching messages delivered; headers added, hidden once saved, sent on deliveries, kept and replaced;
 * a read-only key; a filter on a new listener; the events queue set in the Organization view and a listener there
 * receiving listener_added. Screenshots at phone and desktop size go to a folder the test prints. The steps build
 * on each other, in order.
 */
import { beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { waitFor } from "../e2e/harness.ts";
import type { Receiver } from "../e2e/receiver.ts";
import { browserSuite, DESKTOP } from "./browser.ts";
import { browserForFile, UI_WAIT } from "./suite.ts";

const ENV = { FANOUT_LIVENESS_INTERVAL: "300ms", FANOUT_DELIVERY_TIMEOUT: "1s" };
const GOLD = { names: ["order.*"], data: { total: { $gte: 100 } } };

type Published = { id: string; name: string | null; total: number };
const isGold = (m: Published) => m.name !== null && m.name.startsWith("order.") && m.total >= 100;

browserSuite()("listener filters, headers and the events queue in a browser", () => {
  const ui = browserForFile(ENV);
  const { fanout, page, url, api, see, signIn, shoot } = ui;
  let gold: Receiver;
  let ops: Receiver;
  const published: Published[] = [];
  const ids = { queue: "", listener: "", events: "" };

  beforeAll(async () => {
    [gold, ops] = [await ui.receiver(), await ui.receiver()];
  });

  const card = () => page().locator('[data-listener="gold"]').first();
  const listener = () => api.listenerView(ids.queue, ids.listener);
  const bodyOf = (d: { body: string }) => JSON.parse(d.body) as { id: string; name: string | null; data: any };

  async function publish(name: string | null, total: number): Promise<Published> {
    const id = await api.publish(ids.queue, { total }, name ?? undefined);
    const m = { id, name, total };
    published.push(m);
    return m;
  }

  test("a listener without a filter says it receives every message", async () => {
    ids.queue = await api.queue("orders");
    for (const [name, total] of [["order.created", 50], ["order.created", 150], ["order.paid", 100], ["invoice.paid", 900], [null, 500], ["order.created", 99]] as const) {
      await publish(name, total);
    }
    ids.listener = (await api.listener(ids.queue, "gold", { notifyUrl: gold.notifyUrl, livenessUrl: gold.livenessUrl })).id;
    await signIn(fanout().key);
    await page().goto(url(`/queues/${ids.queue}`));
    await see('[data-listener="gold"] dd', "every message");
  });

  test("the editor counts what a filter would take before it is saved", async () => {
    await card().getByRole("button", { name: "Settings…" }).click();
    await see('[data-listener="gold"] .filter-trial', "Receives every message of the queue.");
    await card().locator("textarea[name=filter-names]").fill("order.*");
    await card().locator("textarea[name=filter-data]").fill('{"total": {"$gte": 100}}');
    const expected = `Would receive ${published.filter(isGold).length} of the last ${published.length} messages.`;
    expect(expected).toBe("Would receive 2 of the last 6 messages.");
    await see('[data-listener="gold"] .filter-trial', expected);
    expect((await listener()).filter).toBeNull();
    await shoot("filter-editor-count", '[data-listener="gold"] .settings-section');
  });

  test("an invalid filter shows the API's error with its path, and cannot be saved", async () => {
    await card().locator("textarea[name=filter-data]").fill('{"total": {"$between": [1, 2]}}');
    await see('[data-listener="gold"] [role=alert]', "/filter/data/total/$between");
    const alert = (await card().locator("[role=alert]").textContent())!;
    expect(alert).toContain("Not a valid filter: Unprocessable Entity (422)");
    expect(alert).toContain("is not an operator");
    expect(await card().locator("textarea[name=filter-data]").getAttribute("aria-invalid")).toBe("true");
    expect(await card().getByRole("button", { name: "Save filter" }).isDisabled()).toBe(true);
    await shoot("filter-editor-error", '[data-listener="gold"] .settings-section');
    // JSON the browser cannot send is refused before any request.
    await card().locator("textarea[name=filter-data]").fill('{"total": ');
    await see('[data-listener="gold"] [role=alert]', "Check the data conditions");
    expect((await listener()).filter).toBeNull();
  });

  test("a saved filter is the listener's, and only matching messages are delivered", async () => {
    await card().locator("textarea[name=filter-data]").fill('{"total": {"$gte": 100}}');
    await see('[data-listener="gold"] .filter-trial', "Would receive 2 of the last 6 messages.");
    await card().getByRole("button", { name: "Save filter" }).click();
    await see('[data-listener="gold"] .notice-ok', "Filter saved");
    expect((await listener()).filter).toEqual(GOLD);
    await see('[data-listener="gold"] .filter-summary', "order.*");

    const before = gold.deliveries().length;
    const refused = [await publish("order.created", 99), await publish("invoice.paid", 1000), await publish(null, 700)];
    const taken = await publish("order.shipped", 120);
    // Fan-out follows publishing order, so once the last message arrived the others were fanned out too.
    await waitFor(() => gold.deliveries().some((d) => bodyOf(d).id === taken.id), UI_WAIT, () => "the matching message was not delivered");
    expect(gold.deliveries().slice(before).map((d) => bodyOf(d).id)).toEqual([taken.id]);
    for (const m of refused) expect((await api.message(ids.queue, m.id)).deliveries).toEqual([]);
  });

  test("headers: added through the form, hidden once saved, sent with deliveries; a reserved name is refused by path", async () => {
    const form = card().locator("form", { hasText: "Headers" });
    await form.getByRole("button", { name: "Add a header" }).click();
    await form.locator("input[name=header-name]").last().fill("Host");
    await form.locator("input[name=header-value]").last().fill("example.com");
    await form.getByRole("button", { name: "Save headers" }).click();
    await see('[data-listener="gold"] [role=alert]', "/headers/Host");
    await form.getByRole("button", { name: "Remove" }).last().click();

    for (const [name, value] of [["Authorization", "Bearer s3cret-token"], ["X-Tenant", "acme"]]) {
      await form.getByRole("button", { name: "Add a header" }).click();
      await form.locator("input[name=header-name]").last().fill(name!);
      await form.locator("input[name=header-value]").last().fill(value!);
    }
    await form.getByRole("button", { name: "Save headers" }).click();
    await see('[data-listener="gold"] .notice-ok', "Saved: 2 headers");
    expect((await listener()).headers).toEqual({ Authorization: "Bearer s3cret-token", "X-Tenant": "acme" });
    await see('[data-listener="gold"] li[data-header="Authorization"] .header-hidden', "value hidden");
    await see('[data-listener="gold"] .header-names', "X-Tenant");
    // Nowhere on the page, neither as text nor in a field.
    expect(await page().evaluate(`document.body.innerText.includes("s3cret") || [...document.querySelectorAll("input, textarea")].some((e) => e.value.includes("s3cret"))`)).toBe(false);

    const m = await publish("order.created", 300);
    const [delivered] = await waitFor(() => { const d = gold.deliveries().filter((x) => bodyOf(x).id === m.id); return d.length > 0 && d; }, UI_WAIT);
    expect(delivered!.headers).toMatchObject({ authorization: "Bearer s3cret-token", "x-tenant": "acme" });
    await shoot("listener-filter-headers", '[data-listener="gold"]');
  });

  test("saving sends the whole set: a removed header goes, a kept one keeps its value, a replaced one changes", async () => {
    const form = card().locator("form", { hasText: "Headers" });
    await form.locator('li[data-header="X-Tenant"]').getByRole("button", { name: "Remove" }).click();
    await form.getByRole("button", { name: "Save headers" }).click();
    await see('[data-listener="gold"] .notice-ok', "Saved: 1 header");
    expect((await listener()).headers).toEqual({ Authorization: "Bearer s3cret-token" });

    await form.locator('li[data-header="Authorization"]').getByRole("button", { name: "Replace" }).click();
    await form.locator('li[data-header="Authorization"] input[name=header-value]').fill("Bearer rotated");
    await form.getByRole("button", { name: "Save headers" }).click();
    await waitFor(async () => (await listener()).headers?.Authorization === "Bearer rotated", UI_WAIT, () => "the replaced value was not saved");
    await see('[data-listener="gold"] li[data-header="Authorization"] .header-hidden', "value hidden");
    await waitFor(() => gold.probes().some((p) => p.headers.authorization === "Bearer rotated"), UI_WAIT, () => "no probe carried the new value");
  });

  test("a key that may only read the listener sees values hidden, and loses the controls once a save is refused", async () => {
    const scopes = [{ resource: "queues", access: "read", targets: ["*"] }, { resource: "listeners", access: "read", targets: ["*"] }];
    const reader = (await api.call("POST", "/v1/api_keys", { name: "reader", scopes })).api_key as string;
    const seen = await fanout().call("h1", "GET", `/v1/queues/${ids.queue}/listeners/${ids.listener}`, { key: reader });
    expect(seen.body.listener.headers).toEqual({ Authorization: "[hidden]" });

    await page().getByRole("button", { name: "Sign out" }).click();
    await signIn(reader);
    expect(await page().locator(".nav-link", { hasText: "Organization" }).count()).toBe(0);
    await page().goto(url(`/queues/${ids.queue}`));
    await see('[data-listener="gold"] .header-names', "value hidden");
    expect(await page().evaluate(`document.body.innerText.includes("[hidden]")`)).toBe(false);
    await card().getByRole("button", { name: "Settings…" }).click();
    // Trying a filter takes only read: the reader still gets a count.
    await see('[data-listener="gold"] .filter-trial', /Would receive \d+ of the last \d+ messages/);
    const form = card().locator("form", { hasText: "Headers" });
    await form.getByRole("button", { name: "Remove" }).click();
    await form.getByRole("button", { name: "Save headers" }).click();
    await see('[data-listener="gold"] [role=alert]', "Forbidden (403)");
    await see('[data-listener="gold"] .notice-warn', "may read this listener but not change it");
    expect(await form.getByRole("button", { name: /Save headers|Remove|Replace|Add a header/ }).count()).toBe(0);
    expect(await card().getByRole("button", { name: "Save filter" }).count()).toBe(0);
    await see('[data-listener="gold"] li[data-header="Authorization"] .header-hidden');
    expect((await listener()).headers).toEqual({ Authorization: "Bearer rotated" });

    await page().getByRole("button", { name: "Sign out" }).click();
    await signIn(fanout().key);
  });

  test("a new listener can take a filter from the add form", async () => {
    await page().goto(url(`/queues/${ids.queue}`));
    await page().fill("input[name=listener-name]", "invoices");
    await page().fill("input[name=notify-url]", gold.notifyUrl);
    await page().fill("input[name=liveness-url]", gold.livenessUrl);
    await page().getByText("Only some messages…").click();
    const add = page().locator("form", { hasText: "Add listener" });
    await add.locator("textarea[name=filter-names]").fill("invoice.*");
    const invoices = published.filter((m) => m.name?.startsWith("invoice.")).length;
    await see("form .filter-trial", `Would receive ${invoices} of the last ${published.length} messages.`);
    await page().getByRole("button", { name: "Add listener" }).click();
    await see(".notice-ok", "Listener invoices added");
    const made = (await api.call("GET", `/v1/queues/${ids.queue}/listeners`)).listeners.find((l: { name: string }) => l.name === "invoices");
    expect(made.filter).toEqual({ names: ["invoice.*"] });
    await see('[data-listener="invoices"] .filter-summary', "invoice.*");
  });

  test("the Organization view sets the events queue, and a listener there receives listener_added", async () => {
    ids.events = await api.queue("ops-events");
    await api.call("POST", `/v1/queues/${ids.events}/listeners`, {
      name: "ops", notify_url: ops.notifyUrl, liveness_url: ops.livenessUrl, filter: { names: ["listener_added"] },
    });
    await page().getByRole("link", { name: "Organization" }).click();
    await see("h1", "Organization");
    await see(".page-sub", "local.fanout");
    await page().selectOption("select[name=events-queue]", { label: "ops-events" });
    await page().getByRole("button", { name: "Save", exact: true }).click();
    await see(".notice-ok", "usage events are now also published to ops-events");
    const org = (await api.call("GET", "/v1/events?limit=1")).events[0].client.id;
    expect((await api.call("GET", `/v1/api_clients/${org}`)).api_client.events_queue_id).toBe(ids.events);
    await shoot("organization");

    const added = await api.listener(ids.queue, "audit", { notifyUrl: gold.notifyUrl, livenessUrl: gold.livenessUrl });
    const [event] = await waitFor(() => { const d = ops.deliveries().map(bodyOf).filter((b) => b.data?.listener?.id === added.id); return d.length > 0 && d; }, UI_WAIT, () => "no listener_added webhook reached the events queue's listener");
    expect(event!.name).toBe("listener_added");
    expect(event!.data).toMatchObject({ type: "listener_added", listener: { id: added.id, name: "audit" }, queue: { id: ids.queue } });
    expect(ops.deliveries().map((d) => bodyOf(d).name).every((n) => n === "listener_added")).toBe(true);

    await page().selectOption("select[name=events-queue]", { label: "None" });
    await page().getByRole("button", { name: "Save", exact: true }).click();
    await see(".notice-ok", "no longer published to a queue");
    expect((await api.call("GET", `/v1/api_clients/${org}`)).api_client.events_queue_id).toBeNull();
  });

  test("the listeners with their filters and headers, as the README shows them", async () => {
    await page().goto(url(`/queues/${ids.queue}`));
    await see('[data-listener="gold"] .header-names');
    await see('[data-listener="audit"] .badge', "Stable");
    await shoot("listeners-filtered", ".listener-grid");
    await page().setViewportSize({ width: DESKTOP.width, height: 1000 });
    await page().evaluate("window.scrollTo(0, 0)");
    await page().screenshot({ path: join(ui.shots(), "readme-listeners.png") });
    await page().setViewportSize(DESKTOP);
  });

  test("Remove filter gives a listener every message again", async () => {
    const invoices = page().locator('[data-listener="invoices"]').first();
    await invoices.getByRole("button", { name: "Settings…" }).click();
    await invoices.getByRole("button", { name: "Remove filter" }).click();
    await see('[data-listener="invoices"] .notice-ok', "Filter removed");
    await see('[data-listener="invoices"] dd', "every message");
    await see('[data-listener="invoices"] .filter-trial', "Receives every message of the queue.");
    const made = (await api.call("GET", `/v1/queues/${ids.queue}/listeners`)).listeners.find((l: { name: string }) => l.name === "invoices");
    expect(made.filter).toBeNull();
  });

  test("the events view shows a liveness change's states", async () => {
    await page().getByRole("link", { name: "Events" }).click();
    await see(".events .badge", "listener state changed");
    await see(".events .event-change", "pending → stable");
    await shoot("events-state-changes", ".events tbody");
    expect(ui.browser().problems).toEqual([]);
  });
});
