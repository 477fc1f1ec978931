/**
 * The command line as a person meets it, through main.ts: version, help, completion scripts, exit codes.
 * Every spelling of each (--version, -v, version, …) is parsed alike; src/config.test.ts covers those.
 */
import { expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { COMMANDS } from "../../src/help.ts";
import { cli, tempDir } from "./harness.ts";
import { checkedOut } from "../support/git.ts";

test("-v prints the version, --help the help with every command, completion a script; a wrong shell exits 2 with one line", async () => {
  const [version, help, bash, unknown] = await Promise.all(
    [["serve", "-v"], ["--help"], ["completion", "bash"], ["completion", "powershell"]].map((args) => cli(args)));
  expect(version).toEqual({ code: 0, stdout: `fanout ${pkg.version} (${checkedOut() ?? "source"})\n`, stderr: "" });
  expect([help!.code, help!.stderr]).toEqual([0, ""]);
  for (const [usage] of COMMANDS) expect(help!.stdout).toContain(`  ${usage}`);
  expect([bash!.code, bash!.stderr]).toEqual([0, ""]);
  expect(bash!.stdout).toContain("complete -F _fanout fanout");
  expect(unknown).toEqual({ code: 2, stdout: "", stderr: "fanout: unknown shell 'powershell' for completion: expected bash, zsh or fish (fanout completion <shell>)\n" });
});

test("run from source where git cannot be found, the version says so in place of a commit", async () => {
  // An empty folder as the whole PATH: with PATH empty, a lookup falls back to /usr/bin and finds git there.
  expect(await cli(["version"], { PATH: tempDir() })).toEqual({ code: 0, stdout: `fanout ${pkg.version} (source)\n`, stderr: "" });
});
