/** The command line as a person meets it: version and help in every spelling, completion scripts, exit codes. */
import { expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { COMMANDS } from "../../src/config.ts";
import { cli } from "./harness.ts";

test("--version, -v and version print the version; --help, -h and help print the help with every command", async () => {
  const [version, ...versions] = await Promise.all([["version"], ["--version"], ["-v"], ["serve", "-v"]].map((args) => cli(args)));
  expect(version).toEqual({ code: 0, stdout: `fanout ${pkg.version}\n`, stderr: "" });
  for (const other of versions) expect(other).toEqual(version!);

  const [help, ...helps] = await Promise.all([["help"], ["--help"], ["-h"], ["orgs", "-h"]].map((args) => cli(args)));
  expect(help!.code).toBe(0);
  for (const [usage] of COMMANDS) expect(help!.stdout).toContain(`  ${usage}`);
  for (const other of helps) expect(other).toEqual(help!);
});

test("completion prints a script for each shell, and refuses a missing or unknown shell with exit 2 and one line", async () => {
  const [bash, zsh, fish, missing, unknown] = await Promise.all(
    [["completion", "bash"], ["completion", "zsh"], ["completion", "fish"], ["completion"], ["completion", "powershell"]].map((args) => cli(args)));
  expect(bash!.stdout).toContain("complete -F _fanout fanout");
  expect(zsh!.stdout).toStartWith("#compdef fanout");
  expect(fish!.stdout).toContain("complete -c fanout");
  for (const ok of [bash, zsh, fish]) expect([ok!.code, ok!.stderr]).toEqual([0, ""]);
  expect(missing).toEqual({ code: 2, stdout: "", stderr: "fanout: missing shell for completion: expected bash, zsh or fish (fanout completion <shell>)\n" });
  expect(unknown).toEqual({ code: 2, stdout: "", stderr: "fanout: unknown shell 'powershell' for completion: expected bash, zsh or fish (fanout completion <shell>)\n" });
});
