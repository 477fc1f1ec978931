/**
 * `npm run release`, limited to this machine's target (`--host-only`, so the suite downloads no foreign runtime):
 * the folder verifies with `sha256sum -c`, and its binary serves and tells its version, commit included.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import pkg from "../../package.json" with { type: "json" };
import { ROOT, startFanout, tempDir } from "./harness.ts";
import { checkedOut } from "../support/git.ts";
import { compile } from "../../scripts/compile.ts";

const dir = tempDir("fanout-release-");
const os = process.platform === "win32" ? "windows" : process.platform;
const binary = join(dir, `fanout-${os}-${process.arch}${os === "windows" ? ".exe" : ""}`);

beforeAll(async () => {
  await $`${process.execPath} ${join(ROOT, "scripts/release.ts")} --host-only --out ${dir}`.cwd(ROOT).quiet();
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the release folder holds the host's binary and a SHA256SUMS that sha256sum -c verifies", async () => {
  expect(readdirSync(dir).sort()).toEqual(["SHA256SUMS", binary.slice(dir.length + 1)].sort());
  const checked = await $`sha256sum -c SHA256SUMS`.cwd(dir).nothrow().quiet();
  expect(checked.exitCode).toBe(0);
  expect(checked.stdout.toString()).toBe(`${binary.slice(dir.length + 1)}: OK\n`);
});

test("the released binary names the commit it was built from, and a build of another commit prints another version", async () => {
  const alone = tempDir("fanout-nogit-");
  const version = (file: string) => $`${file} --version`.cwd(alone).env({ PATH: alone }).text();
  const released = await version(binary);
  expect(released).toBe(`fanout ${pkg.version} (${checkedOut() ?? "unknown"})\n`);
  const other = join(alone, "fanout-other");
  expect(await compile(other, { commit: "0000000" })).toBe("0000000");
  expect(await version(other)).toBe(`fanout ${pkg.version} (0000000)\n`);
});

test("the released binary serves /healthz", async () => {
  const fanout = await startFanout({ binary, env: { FANOUT_DB: ":memory:" } });
  try {
    const health = await fanout.call("h1", "GET", "/healthz", { key: null });
    expect([health.status, health.body]).toEqual([200, { status: "ok" }]);
  } finally {
    expect(await fanout.stop()).toBe(0);
  }
});
