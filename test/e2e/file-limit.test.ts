/**
 * `fanout serve` warns once at start when its open-file limit is below 4096 (docs/operations.md): the real server,
 * started by a shell that sets the limit first (Bun raises the soft limit to the hard one, so both are set).
 */
import { afterEach, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startFanout, tempDir, type Fanout } from "./harness.ts";
import { openFileLimit } from "../../src/lib/file-limit.ts";

const WARNING = "open-file limit below 4096";
let fanout: Fanout | undefined;
afterEach(async () => {
  await fanout?.stop();
  fanout = undefined;
});

/** A stand-in for the binary: sets the limit, then runs `bun src/main.ts` with the arguments given. */
function withFileLimit(limit: number): string {
  const script = join(tempDir(), "fanout-with-limit");
  writeFileSync(script, `#!/bin/sh\nulimit -n ${limit} || exit 97\nexec "${process.execPath}" "${join(ROOT, "src/main.ts")}" "$@"\n`);
  chmodSync(script, 0o755);
  return script;
}

const linux = openFileLimit() !== null;

test.skipIf(!linux)("a limit of 1000 gets one warning at start, naming the limit", async () => {
  fanout = await startFanout({ binary: withFileLimit(1000) });
  const warnings = fanout.output().split("\n").filter((line) => line.includes(WARNING));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("limit=1000");
});

test.skipIf(!linux || openFileLimit()! < 4096)("a limit of 4096 gets none", async () => {
  fanout = await startFanout({ binary: withFileLimit(4096) });
  expect(fanout.output()).toContain("listening on");
  expect(fanout.output()).not.toContain(WARNING);
});
