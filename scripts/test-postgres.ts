/**
 * The second half of `npm test`: the end-to-end suite again with every server on PostgreSQL
 * (FANOUT_TEST_BACKEND=postgres, a database per server on FANOUT_TEST_PG). The first half (`bun test`) already ran
 * the store conformance suite on both backends and the PostgreSQL-only end-to-end files. Skipped with one line
 * when no server is reachable, except under CI=true, where that fails the run (test/support/postgres.ts).
 */
import { readdirSync } from "node:fs";
import { postgresAvailable } from "../test/support/postgres.ts";

/** End-to-end files that would test nothing new on PostgreSQL, and why. Every other file runs on both backends. */
const SAME_ON_BOTH: Record<string, string> = {
  "checkpoints.test.ts": "SQLite's WAL file and its checkpoint thread",
  "openapi.test.ts": "the HTTP layer only",
  "host-header.test.ts": "the HTTP layer only",
  "tls.test.ts": "the HTTP layer only",
  "delivery-targets.test.ts": "the SSRF guard of outbound requests",
  "binary.test.ts": "the binary's CLI and HTTP basics (delivery-binary.test.ts runs the binary on PostgreSQL)",
  "cli.test.ts": "version, help and completion: no database",
  "file-limit.test.ts": "the process's open-file limit",
  "one-server.test.ts": "SQLite's one-server-per-file lock",
  "storage-full.test.ts": "SQLite's file on a full tmpfs (postgres-restart.test.ts covers a server that cannot be used)",
  "readme.test.ts": "the README's quick start, on its SQLite file",
  "release.test.ts": "the release build",
  "instances.test.ts": "PostgreSQL-only, ran in the first half",
  "postgres-restart.test.ts": "PostgreSQL-only, ran in the first half",
  "fifo-instances.test.ts": "PostgreSQL-only, ran in the first half",
};

if (!(await postgresAvailable())) process.exit(0);
const files = readdirSync("test/e2e").filter((f) => f.endsWith(".test.ts") && !(f in SAME_ON_BOTH)).map((f) => `test/e2e/${f}`);
console.log(`end-to-end tests on PostgreSQL: ${files.length} files`);
const run = Bun.spawn([process.execPath, "test", "--timeout", "60000", ...files], {
  env: { ...process.env, FANOUT_TEST_BACKEND: "postgres" },
  stdio: ["inherit", "inherit", "inherit"],
});
process.exit(await run.exited);
