/**
 * A listener's pace and order in the dashboard, in a real browser against the real server and real receivers on
 * 127.0.0.1: a rate limit, a concurrency and FIFO set through the settings panel and read back from the API, the
 * card's settings and current pace, a refused combination shown as the API sent it, and the head of a FIFO
 * listener's line while its listener is down and while its receiver answers 500. Screenshots at phone and desktop
 * size go to a folder the test prints. The steps build on each other, in order.
 */
import { beforeAll, expect, test } from "bun:test";
import { waitFor } from "../e2e/harness.ts";
import { status, type Receiver } from "../e2e/receiver.ts";
import { browserSuite } from "./browser.ts";
import { browserForFile, UI_WAIT } from "./suite.ts";

// Four quick retries, then a minute's wait: the head's attempts climb while the test watches, then it stays put.
const ENV = { FANOUT_RETRY_SCHEDULE: "1s,1s,1s,1s,1m,1m", FANOUT_LIVENESS_INTERVAL: "300ms", FANOUT_DELIVERY_TIMEOUT: "1s" };

browserSuite()("pace and order in a browser", () => {
  const ui = browserForFile(ENV);
  const { fanout, page, url, api, see, signIn, shoot } = ui;
  let fast: Receiver;
  let ledger: Receiver;
  const ids = { queue: "", paced: "", ledger: "" };
  const lineMessages: string[] = [];

  beforeAll(async () => {
    [fast, ledger] = [await ui.receiver(), await ui.receiver()];
  });

  const card = (name: string) => page().locator(`[data-listener="${name}"]`).first();
  const form = (name: string) => card(name).locator("form", { hasText: "Pace and order" });
  const view = (id: string) => api.listenerView(ids.queue, id);
  /** The first match's text now, "" without one (no waiting). */
  const text = async (selector: string) => (await page().locator(selector).allTextContents())[0] ?? "";

  /** The attempts the card's head of the line shows, once it shows one at least `atLeast`. */
  async function headAttempts(atLeast: number): Promise<number> {
    return waitFor(async () => {
      const n = Number(/(\d+) attempts?/.exec(await text('[data-listener="ledger"] .line-attempts'))?.[1] ?? -1);
      return n >= atLeast && n;
    }, UI_WAIT, () => `the head never showed ${atLeast} attempts or more`);
  }

  test("rate limit and concurrency set through the panel are the listener's, and shown on its card", async () => {
    ids.queue = await api.queue("payments");
    ids.paced = (await api.listener(ids.queue, "paced", { notifyUrl: fast.notifyUrl, livenessUrl: fast.livenessUrl })).id;
    await signIn(fanout().key);
    await page().goto(url(`/queues/${ids.queue}`));
    // Nothing of its own yet: the pace row holds only the measured pace.
    await see('[data-listener="paced"] .pace-now', "≈ 0/s acknowledged");
    expect(await card("paced").locator(".pace-limits, .order").count()).toBe(0);

    await card("paced").getByRole("button", { name: "Settings…" }).click();
    expect(await form("paced").getByRole("button", { name: "Save pace and order" }).isDisabled()).toBe(true);
    await form("paced").locator("input[name=rate-limit]").fill("20");
    await form("paced").locator("input[name=concurrency]").fill("2");
    await see('[data-listener="paced"] .unsaved', "Not saved yet");
    await form("paced").getByRole("button", { name: "Save pace and order" }).click();
    await see('[data-listener="paced"] .notice-ok', "Saved: at most 20/s, 2 at a time, unordered.");
    expect(await view(ids.paced)).toMatchObject({ rate_limit: 20, concurrency: 2, ordering: "unordered" });
    await see('[data-listener="paced"] .pace-limits', "at most 20/s · 2 at a time");
    await shoot("pace-settings", '[data-listener="paced"] .settings-section:last-of-type');
  });

  test("the card shows the pace the listener is acknowledged at, within its rate limit", async () => {
    for (let i = 0; i < 120; i++) await api.publish(ids.queue, { i }, "payment.settled");
    // Measured in the browser between two polls; the limit holds it at 20 a second.
    const shown = await waitFor(async () => {
      const n = Number(/≈ ([\d.]+)\/s acknowledged/.exec(await text('[data-listener="paced"] .pace-now'))?.[1] ?? 0);
      return n >= 8 && n;
    }, UI_WAIT, () => "the card never showed the listener's pace");
    expect(shown).toBeLessThanOrEqual(30);
    await card("paced").getByRole("button", { name: "Close" }).click();
    await shoot("pace-card", '[data-listener="paced"]');
    await card("paced").getByRole("button", { name: "Settings…" }).click();
  });

  test("FIFO with a concurrency of 4 is refused, and the API's 422 is shown with its path", async () => {
    await form("paced").getByLabel("FIFO: one at a time, in publish order").check();
    await form("paced").locator("input[name=concurrency]").fill("4");
    await form("paced").getByRole("button", { name: "Save pace and order" }).click();
    await see('[data-listener="paced"] [role=alert]', "/concurrency");
    const alert = await text('[data-listener="paced"] [role=alert]');
    expect(alert).toContain("Pace and order were not saved: Unprocessable Entity (422)");
    expect(alert).toContain("concurrency must be 1 or null");
    expect(await view(ids.paced)).toMatchObject({ rate_limit: 20, concurrency: 2, ordering: "unordered" });
    await shoot("pace-refused", '[data-listener="paced"] .settings-section:last-of-type');

    // A value that is not a whole number is refused before any request.
    await form("paced").locator("input[name=concurrency]").fill("two");
    await form("paced").getByRole("button", { name: "Save pace and order" }).click();
    await see('[data-listener="paced"] [role=alert]', "Check the concurrency");
  });

  test("FIFO is saved with the server's concurrency, and an emptied rate limit removes it", async () => {
    await form("paced").locator("input[name=concurrency]").fill("");
    await form("paced").getByRole("button", { name: "Save pace and order" }).click();
    await see('[data-listener="paced"] .notice-ok', "Saved: at most 20/s, FIFO.");
    expect(await view(ids.paced)).toMatchObject({ rate_limit: 20, concurrency: null, ordering: "fifo" });
    await see('[data-listener="paced"] .order', "FIFO");

    await form("paced").locator("input[name=rate-limit]").fill("");
    await form("paced").getByRole("button", { name: "Save pace and order" }).click();
    await see('[data-listener="paced"] .notice-ok', "Saved: no limits of its own, FIFO.");
    expect(await view(ids.paced)).toMatchObject({ rate_limit: null, concurrency: null, ordering: "fifo" });
    await waitFor(async () => (await card("paced").locator(".pace-limits").count()) === 0, UI_WAIT, () => "the card still shows a rate limit");
    await card("paced").getByRole("button", { name: "Settings…" }).click();
    // Its backlog sent, nothing waits in its line.
    await see('[data-listener="paced"] .line-empty', "none: every delivery so far is final");
  });

  test("a FIFO listener that is down shows its head held and how many wait behind it", async () => {
    ledger.answer("/live", status(500));
    ids.ledger = (await api.call("POST", `/v1/queues/${ids.queue}/listeners`, {
      name: "ledger", notify_url: ledger.notifyUrl, liveness_url: ledger.livenessUrl, ordering: "fifo",
    })).listener.id;
    await waitFor(async () => (await view(ids.ledger)).liveness.state === "down", UI_WAIT, () => "the listener never went down");
    for (const step of ["entry.opened", "entry.posted", "entry.closed"]) lineMessages.push(await api.publish(ids.queue, { step }, step));
    await waitFor(async () => (await view(ids.ledger)).line?.waiting === 3, UI_WAIT, () => "the three deliveries never waited in the line");

    await see('[data-listener="ledger"] .line-when', "Held while the listener is down");
    await see('[data-listener="ledger"] .line-behind', "2 deliveries wait behind it");
    expect(await text('[data-listener="ledger"] .line-head code')).toBe(lineMessages[0]!);
    expect(await text('[data-listener="ledger"] .line-attempts')).toBe("0 attempts");
    await shoot("fifo-held", '[data-listener="ledger"]');
  });

  test("a FIFO listener whose receiver answers 500 shows its head's attempts climbing, and the line behind it", async () => {
    ledger.answer("/notify", status(500));
    ledger.answer("/live", () => new Response("ok"));
    const first = await headAttempts(1);
    const later = await headAttempts(first + 1);
    expect(later).toBeGreaterThan(first);
    expect(await text('[data-listener="ledger"] .line-head code')).toBe(lineMessages[0]!);
    await see('[data-listener="ledger"] .line-behind', "2 deliveries wait behind it");
    // The quick retries spent, it waits a minute for the next.
    await headAttempts(5);
    await see('[data-listener="ledger"] .line-when', /Waiting for its retry at .+ \(in \d+ s\)\./);
    await see('[data-listener="ledger"] .line-head .badge', "Pending");
    const received = ledger.deliveries().map((d) => JSON.parse(d.body).id);
    expect(new Set(received)).toEqual(new Set([lineMessages[0]]));
    await shoot("fifo-head", '[data-listener="ledger"]');

    await card("ledger").locator(".line-head a").click();
    await see(".card h2", "entry.opened");
    expect(page().url()).toContain(`/queues/${ids.queue}/messages/${lineMessages[0]}`);
    expect(ui.browser().problems).toEqual([]);
  });
});
