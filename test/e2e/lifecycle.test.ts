/** Onboarding, restarts, CLI commands beside a live server, backup and clean shutdown. */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cli, PROTOS, startFanout, tempDir } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

/** Runs the curl line the welcome printed with bash, as a person pasting it would; returns the HTTP status. */
async function runWelcomeCurl(output: string, env: Record<string, string> = {}): Promise<string> {
  const line = output.match(/^ +(curl .*)$/m)?.[1];
  expect(line).toBeDefined();
  const proc = Bun.spawn(["bash", "-c", `${line} -sS -o /dev/null -w '%{http_code}'`], { env: { ...process.env, ...env }, stdout: "pipe" });
  const [status] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return status;
}

describe("lifecycle", () => {
  test("first start onboards once and prints a generated owner key; a restart on the same file loses nothing", async () => {
    const dir = tempDir();
    const db = join(dir, "fanout.db");
    const env = { FANOUT_BOOTSTRAP_KEY: "" }; // empty counts as unset: the key is generated and printed
    const first = await startFanout({ db, env });
    const out = first.output();
    const key = out.match(/owner key:\s+(fo_[0-9A-Za-z]{43})/)?.[1];
    expect(key).toBeDefined();
    expect(await runWelcomeCurl(out)).toBe("200");
    expect(out).toContain(db);
    expect(existsSync(join(dir, "tls-cert.pem"))).toBe(true);
    const made = await first.call("h1", "POST", "/v1/queues", { key: key!, body: { name: "kept" } });
    expect(made.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await startFanout({ db, env });
    expect(second.output()).not.toContain("owner key");
    for (const proto of PROTOS) {
      const got = await second.call(proto, "GET", `/v1/queues/${made.body.queue.id}`, { key: key! });
      expect(got.body.queue).toEqual(made.body.queue);
    }
    expect(await second.stop()).toBe(0);
  });

  test("with a given owner key, the welcome's curl line works when pasted into a shell that holds the key", async () => {
    const key = `given-${crypto.randomUUID()}`;
    const fanout = await startFanout({ args: ["--bootstrap-key", key], env: { FANOUT_BOOTSTRAP_KEY: "" } });
    expect(fanout.output()).not.toContain(key);
    expect(await runWelcomeCurl(fanout.output(), { FANOUT_BOOTSTRAP_KEY: key })).toBe("200");
    expect((await fanout.call("h1", "GET", "/v1/queues", { key })).body.queues.map((q: { name: string }) => q.name)).toEqual(["first"]);
    expect(await fanout.stop()).toBe(0);
  });

  test("orgs create works while a server runs on the same file, and the new org is isolated", async () => {
    const fanout = await startFanout();
    const created = await cli(["orgs", "create", "com.example.other"], { FANOUT_DB: fanout.dbPath });
    expect(created.code).toBe(0);
    const otherKey = created.stdout.match(/owner key:\s+(\S+)/)?.[1]!;
    const otherId = created.stdout.match(/id:\s+(\S+)/)?.[1]!;
    const mine = await fanout.call("h2", "POST", "/v1/queues", { body: { name: "mine" } });
    expect((await fanout.call("h2", "GET", `/v1/queues/${mine.body.queue.id}`, { key: otherKey })).status).toBe(404);
    expect((await fanout.call("h1", "GET", "/v1/queues", { key: otherKey })).body.queues).toEqual([]);
    expect((await cli(["orgs", "create", "com.example.other"], { FANOUT_DB: fanout.dbPath })).code).toBe(1);
    const list = await cli(["orgs", "list"], { FANOUT_DB: fanout.dbPath });
    expect(list.stdout).toContain(`${otherId}\tcom.example.other`);
    expect((await cli(["orgs", "create", "NotReverseDns"], { FANOUT_DB: fanout.dbPath })).code).toBe(2);

    const backup = join(tempDir(), "copy.db");
    expect((await cli(["backup", backup], { FANOUT_DB: fanout.dbPath })).code).toBe(0);
    const restored = await startFanout({ db: backup, env: { FANOUT_BOOTSTRAP_KEY: fanout.key } });
    expect((await restored.call("h1", "GET", `/v1/queues/${mine.body.queue.id}`)).body.queue.name).toBe("mine");
    expect(await restored.stop()).toBe(0);
    expect(await fanout.stop()).toBe(0);
  });

  test("a throwaway :memory: instance, as CI runs it, needs no database file and delivers", async () => {
    const fanout = await startFanout({ env: { FANOUT_DB: ":memory:" } });
    const receiver = await Receiver.start();
    try {
      expect(fanout.output()).toContain("in memory");
      const api = deliveryApi(fanout, "h2");
      const queue = await api.queue();
      await api.listener(queue, "ci", receiver);
      const id = await api.publish(queue, { ci: true });
      const [delivery] = await receiver.waitForDeliveries(1);
      expect(JSON.parse(delivery!.body)).toMatchObject({ id, data: { ci: true } });
      expect(await fanout.stop()).toBe(0);
    } finally {
      receiver.close();
    }
  });

  test("invalid configuration exits 2 with one line; help and migrate work", async () => {
    const bad = await cli(["serve", "--retry-schedule", "5 seconds"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect((await cli(["help"])).stdout).toContain("--allow-targets");
    const db = join(tempDir(), "m.db");
    const migrated = await cli(["migrate"], { FANOUT_DB: db });
    expect(migrated.code).toBe(0);
    expect(existsSync(db)).toBe(true);
  });
});
