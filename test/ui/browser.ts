/**
 * Debian's Chromium driven by playwright-core (its own browser download cannot work here), headless, with a
 * fresh profile. Under CI=true the browser tests must run, so a missing Chromium fails them; elsewhere they
 * say so in one line and are skipped.
 */
import { describe } from "bun:test";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { tempDir } from "../e2e/harness.ts";

export const CHROMIUM = process.env.FANOUT_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

/** `describe` when the browser tests can run (or must, under CI), else `describe.skip` after one line. */
export function browserSuite(): typeof describe | typeof describe.skip {
  if (existsSync(CHROMIUM) || process.env.CI === "true") return describe;
  console.log(`dashboard browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set FANOUT_CHROMIUM)`);
  return describe.skip;
}

export type Browser = { context: BrowserContext; page: Page; problems: string[]; close(): Promise<void> };

/**
 * A browser with one tab. `problems` collects what must never happen: uncaught errors in the page and
 * Content-Security-Policy violations (the dashboard must work under its own policy).
 */
export async function openBrowser(): Promise<Browser> {
  const profile = tempDir("fanout-chromium-");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: FLAGS,
    ignoreHTTPSErrors: true,
    viewport: DESKTOP,
    timeout: 60_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content.Security.Policy/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, problems, close };
}

export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 390, height: 844 };

/** A folder under the OS temp dir for screenshots, printed so a person can look at them. */
export function screenshotDir(): string {
  const dir = join(tmpdir(), `fanout-ui-screenshots-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(dir, { recursive: true });
  console.log(`dashboard screenshots: ${dir}`);
  return dir;
}
