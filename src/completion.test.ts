import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigSchema, type Shell } from "./config.ts";
import { completionScript } from "./completion.ts";
import { tempFolder } from "../test/support/temp.ts";

const dir = tempFolder("fanout-completion-");
const scriptFile = (shell: Shell) => {
  const file = join(dir, `fanout.${shell}`);
  writeFileSync(file, completionScript(shell));
  return file;
};
const SCHEMA_FLAGS = Object.values(ConfigSchema.properties).map((schema) => (schema["cli"] as { flag: string }).flag);

function run(argv: string[]): { code: number; stdout: string; stderr: string } {
  const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

/** Calls the bash completion function as bash does: COMP_WORDS holds the line, the last word is being completed. */
function completeInBash(words: string[]): string[] {
  const file = scriptFile("bash");
  const quoted = words.map((w) => `'${w}'`).join(" ");
  const program = `source '${file}'; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _fanout; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const result = run(["bash", "--norc", "--noprofile", "-c", program]);
  expect(result.stderr).toBe("");
  return result.stdout.split("\n").filter(Boolean);
}

describe("bash completion", () => {
  test("completes commands, subcommands and shells", () => {
    expect(completeInBash(["fanout", ""])).toEqual(["serve", "migrate", "orgs", "backup", "compact", "completion", "version", "help"]);
    expect(completeInBash(["fanout", "or"])).toEqual(["orgs"]);
    expect(completeInBash(["fanout", "orgs", ""])).toEqual(["create", "list"]);
    expect(completeInBash(["fanout", "orgs", "create", ""])).toEqual([]);
    expect(completeInBash(["fanout", "completion", "z"])).toEqual(["zsh"]);
  });

  test("completes every flag of the configuration, and the help and version flags", () => {
    const flags = completeInBash(["fanout", "serve", "--"]);
    expect(flags.sort()).toEqual([...SCHEMA_FLAGS, "--help", "--version"].sort());
    expect(completeInBash(["fanout", "-"])).toEqual(expect.arrayContaining(["-h", "-v", "--allow-targets"]));
    expect(completeInBash(["fanout", "--dur"])).toEqual(["--durability"]);
  });

  test("completes flag values, and skips flags and their values to find the command", () => {
    expect(completeInBash(["fanout", "--durability", ""])).toEqual(["normal", "full"]);
    expect(completeInBash(["fanout", "--durability", "=", "fu"])).toEqual(["full"]);
    expect(completeInBash(["fanout", "--trust-proxy", "="])).toEqual(["on", "off"]);
    expect(completeInBash(["fanout", "--port", ""])).toEqual([]);
    expect(completeInBash(["fanout", "--db", "x.db", "orgs", ""])).toEqual(["create", "list"]);
    expect(completeInBash(["fanout", "--db", "=", "x.db", "--trust-proxy", "orgs", "l"])).toEqual(["list"]);
    expect(completeInBash(["fanout", "--db", dir.slice(0, -2)])).toContain(dir);
    expect(completeInBash(["fanout", "backup", dir.slice(0, -2)])).toContain(dir);
  });
});

for (const shell of ["zsh", "fish"] as const) {
  const installed = Bun.which(shell) !== null;
  if (!installed) console.log(`${shell} is not installed: skipping the ${shell} completion checks (apt-get install ${shell})`);
  test.skipIf(!installed)(`the ${shell} script passes ${shell} -n`, () => {
    const result = run([shell, "-n", scriptFile(shell)]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });
}

test.skipIf(Bun.which("fish") === null)("fish completes commands, subcommands, flags and flag values", () => {
  const file = scriptFile("fish");
  const complete = (line: string) => {
    const result = run(["fish", "--no-config", "-c", `source '${file}'; complete -C '${line}'`]);
    return result.stdout.split("\n").filter(Boolean).map((row) => row.split("\t")[0]);
  };
  expect(complete("fanout or")).toEqual(["orgs"]);
  expect(complete("fanout --db x.db orgs ")).toEqual(["create", "list"]);
  expect(complete("fanout --durability=")).toEqual(["--durability=full", "--durability=normal"]);
  // fish offers a flag whose value is optional twice: bare and with `=`.
  const flags = new Set(complete("fanout serve --").map((flag) => flag!.replace(/=$/, "")));
  expect([...flags].sort()).toEqual([...SCHEMA_FLAGS, "--help", "--version"].sort());
});
