/** The compiled executable, copied alone into an empty folder, runs the service end to end. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import { Database } from "bun:sqlite";
import pkg from "../../package.json" with { type: "json" };
import { migrations } from "../../src/store/sqlite/migrations.gen.ts";
import { isCommit } from "../support/git.ts";
import { PROTOS, ROOT, startFanout, tempDir, type Fanout } from "./harness.ts";
import { scrape } from "./prometheus.ts";

let fanout: Fanout;
let binary: string;

beforeAll(async () => {
  const built = join(ROOT, "dist/fanout");
  // `npm test` builds first; a direct `bun test` builds here so the test never runs a stale or missing binary.
  if (!existsSync(built)) await $`${process.execPath} ${join(ROOT, "scripts/build.ts")}`.cwd(ROOT).quiet();
  binary = join(tempDir("fanout-bin-"), "fanout");
  copyFileSync(built, binary);
  fanout = await startFanout({ binary });
}, 120_000);
afterAll(async () => void (await fanout?.stop()));

test("the binary alone, with no git to ask, names the commit of this repository it was built from", async () => {
  const alone = tempDir("fanout-nogit-");
  const out = await $`${binary} version`.cwd(alone).env({ PATH: alone }).text();
  const [, version, commit] = out.match(/^fanout (\d+\.\d+\.\d+) \(([0-9a-f]{7,})(?:-dirty)?\)\n$/) ?? [];
  expect({ out, version }).toEqual({ out, version: pkg.version });
  expect({ commit, known: isCommit(commit!) }).toEqual({ commit, known: true });
});

test("the binary refuses a database a newer fanout migrated, naming its own version and commit", async () => {
  const db = join(tempDir(), "fanout.db");
  expect((await $`${binary} migrate --db ${db}`.quiet().nothrow()).exitCode).toBe(0);
  const file = new Database(db);
  file.run("INSERT INTO __drizzle_migrations (hash, created_at, fanout_version) VALUES ('newer', ?, '9.9.9 (fffffff)')", [migrations.at(-1)!.when + 1]);
  file.close();
  // Killed after 20 s if it serves instead.
  const refused = Bun.spawn([binary, "serve", "--port", "0", "--db", db], { stdout: "ignore", stderr: "pipe", timeout: 20_000 });
  const [stderr, code] = await Promise.all([new Response(refused.stderr).text(), refused.exited]);
  const own = (await $`${binary} version`.text()).trim().replace(/^fanout /, "");
  expect({ code, stderr }).toEqual({
    code: 2,
    stderr: `fanout: the database ${db} was migrated by fanout 9.9.9 (fffffff), newer than this fanout ${own}: 1 of its migrations is unknown here; ` +
      "run the newer fanout, or restore a backup taken before the upgrade\n",
  });
});

test("the binary serves /metrics with prom-client's process figures", async () => {
  expect((await fanout.call("h1", "POST", "/v1/queues", { body: { name: "bin-metrics" } })).status).toBe(200);
  const m = await scrape(fanout);
  expect(m.value("fanout_info")).toBe(1);
  expect(m.value("fanout_http_requests_total", { method: "POST", route: "/v1/queues", status: "200" })).toBe(1);
  for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds", "process_max_fds"]) {
    expect({ name, positive: m.value(name)! > 0 }).toEqual({ name, positive: true });
  }
});

test("the binary validates as the source does: query bounds hold, bodies too deep are refused", async () => {
  // Elysia compiles its validators from generated source; a build that renamed identifiers left query bounds
  // unchecked in the binary alone, and `?page=1e20` reached SQLite as a 500.
  for (const query of ["page=99999999999999999999", "page=1e20&per_page=1e9", "per_page=1000"]) {
    const r = await fanout.call("h1", "GET", `/v1/queues?${query}`);
    expect({ query, status: r.status, title: r.body?.title }).toEqual({ query, status: 400, title: "Bad Request" });
  }
  const deep = await fanout.call("h2", "POST", "/v1/queues", { raw: "[".repeat(10_000) + "]".repeat(10_000) });
  expect(deep.status).toBe(400);
});

test("the binary serves the API over HTTP/1.1 and HTTP/2 and stops cleanly", async () => {
  for (const proto of PROTOS) {
    const created = await fanout.call(proto, "POST", "/v1/queues", { body: { name: `bin-${proto}` } });
    expect(created.status).toBe(200);
    const got = await fanout.call(proto, "GET", `/v1/queues/${created.body.queue.id}`);
    expect(got.body.queue.name).toBe(`bin-${proto}`);
  }
  expect(await fanout.stop()).toBe(0);
});

test("the binary rejects invalid configuration with exit code 2 and one line", async () => {
  const proc = Bun.spawn([binary, "serve", "--durability", "sometimes"], { stderr: "pipe", stdout: "pipe" });
  const stderr = await new Response(proc.stderr).text();
  expect(await proc.exited).toBe(2);
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).toContain("--durability");
});
