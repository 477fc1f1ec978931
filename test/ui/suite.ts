/**
 * What a browser test file starts before its steps and stops after them (the server and its receivers, a browser,
 * a folder for screenshots), and what its steps do on the dashboard's page: wait to see, sign in, shoot.
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { join } from "node:path";
import { serverForFile } from "../e2e/receiver.ts";
import { openBrowser, screenshotDir, DESKTOP, PHONE, type Browser } from "./browser.ts";

/** How long a step waits for the page, or for a delivery the page started. */
export const UI_WAIT = 20_000;

/** serverForFile's server, API and receivers, with a browser on the server's dashboard. Call inside the suite. */
export function browserForFile(env: Record<string, string>) {
  const server = serverForFile(env);
  let opened: Browser | undefined;
  let shots = "";
  beforeAll(async () => {
    opened = await openBrowser();
    shots = screenshotDir();
  }, 120_000);
  afterAll(async () => {
    await opened?.close();
  });

  const browser = (): Browser => {
    if (!opened) throw new Error("the browser opens in beforeAll");
    return opened;
  };
  const page = () => browser().page;
  const see = (selector: string, hasText?: string | RegExp) =>
    page().locator(selector, hasText === undefined ? {} : { hasText }).first().waitFor({ timeout: UI_WAIT });
  /** Types `key` into the sign-in form and submits it, whatever the answer. */
  const submitKey = async (key: string) => {
    await page().fill("input[name=api-key]", key);
    await page().getByRole("button", { name: "Sign in" }).click();
  };

  return {
    ...server,
    browser,
    page,
    see,
    submitKey,
    /** The folder this file's screenshots go to. */
    shots: () => shots,
    url: (path: string) => `${server.fanout().url}/ui${path}`,
    /** Signs in from the dashboard's first page and waits for the queues. */
    async signIn(key: string): Promise<void> {
      await page().goto(`${server.fanout().url}/ui/`);
      await submitKey(key);
      await see("h1", "Queues");
    },
    /**
     * Both sizes, the whole page and (given `part`) that element alone, legible at full size; neither the page nor
     * the main navigation may be wider than the screen.
     */
    async shoot(name: string, part?: string): Promise<void> {
      for (const [size, viewport] of [["phone", PHONE], ["desktop", DESKTOP]] as const) {
        await page().setViewportSize(viewport);
        await page().evaluate("window.scrollTo(0, 0)");
        const overflow = await page().evaluate(`[document.documentElement.scrollWidth - window.innerWidth, ((n) => n.scrollWidth - n.clientWidth)(document.querySelector(".nav"))]`);
        expect({ name, size, overflow }).toEqual({ name, size, overflow: [0, 0] });
        await page().screenshot({ path: join(shots, `${name}-${size}.png`), fullPage: true });
        if (part) await page().locator(part).first().screenshot({ path: join(shots, `${name}-${size}-part.png`) });
      }
      await page().setViewportSize(DESKTOP);
    },
  };
}
