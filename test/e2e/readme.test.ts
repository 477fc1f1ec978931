/**
 * README.md's first delivery, run as written so the README cannot drift: the block marked
 * `<!-- readme-test: server -->` gives the environment of a real server, the block marked
 * `<!-- readme-test: tour -->` runs in bash against it, and the receiver that block starts must get a
 * delivery whose Standard Webhooks signature verifies with the listener's secret. Only the addresses change:
 * the server listens on the harness's free port and the receiver on another, so parallel runs do not collide.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { ROOT, startFanout, tempDir, type Fanout } from "./harness.ts";

const README = readFileSync(join(ROOT, "README.md"), "utf8");
const README_ORIGIN = "https://localhost:8443";
const README_RECEIVER_PORT = "9000";

/** The fenced shell block right after `<!-- readme-test: <name> -->`. */
function markedBlock(markdown: string, name: string): string {
  const found = new RegExp(`<!-- readme-test: ${name} -->\\s*\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\``).exec(markdown);
  if (!found) throw new Error(`README.md has no sh block marked <!-- readme-test: ${name} -->`);
  return found[1]!;
}

/** `A=1 B=2 npm start` → { A: "1", B: "2" }: the environment the README tells the reader to start with. */
function startEnvironment(line: string): Record<string, string> {
  const found = /^((?:[A-Z_]+=\S+ +)+)npm start$/.exec(line.trim());
  if (!found) throw new Error(`the server block is not "VAR=value … npm start": ${line}`);
  return Object.fromEntries(found[1]!.trim().split(/ +/).map((pair) => pair.split(/=(.*)/s, 2) as [string, string]));
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** Runs the script with bash in its own process group, which is killed afterwards with whatever it started. */
async function runBash(script: string, ms: number): Promise<{ code: number | null; output: string }> {
  const proc = Bun.spawn(["bash", "-c", script], { cwd: tempDir(), stdout: "pipe", stderr: "pipe", detached: true });
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  const collecting = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  const timer = setTimeout(() => process.kill(-proc.pid, "SIGKILL"), ms);
  const code = await proc.exited;
  clearTimeout(timer);
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    // the group is gone already: the script stopped its receiver itself, as the README does
  }
  await collecting;
  return { code: proc.signalCode ? null : code, output };
}

/** The receiver prints `METHOD path`, one `name: value` line per header, then the body. */
function printedRequest(output: string, requestLine: string): { headers: Record<string, string>; body: string } {
  const lines = output.split("\n");
  const start = lines.indexOf(requestLine);
  if (start < 0) throw new Error(`the receiver printed no "${requestLine}":\n${output}`);
  const headers: Record<string, string> = {};
  let i = start + 1;
  for (; /^[a-z0-9-]+: /.test(lines[i] ?? ""); i++) {
    const [name, value] = lines[i]!.split(/: (.*)/s, 2) as [string, string];
    headers[name] = value;
  }
  return { headers, body: lines[i] ?? "" };
}

let fanout: Fanout;
const serverEnv = startEnvironment(markedBlock(README, "server"));

beforeAll(async () => {
  // The harness allows 127.0.0.1 by default; here only what the README says counts.
  fanout = await startFanout({ env: { FANOUT_ALLOW_TARGETS: "", ...serverEnv } });
});
afterAll(async () => {
  await fanout?.stop();
});

test("the README keeps the two commands of the quick start", () => {
  expect(README).toContain("npm install && npm start");
  expect(README).toContain("npm test");
});

test("the README's first delivery, pasted into bash, delivers a signed webhook to its receiver", async () => {
  const tour = markedBlock(README, "tour");
  expect(tour).toContain(README_ORIGIN);
  expect(tour).toContain(README_RECEIVER_PORT);
  const port = String(await freePort());
  const script = tour.replaceAll(README_ORIGIN, fanout.url).replaceAll(README_RECEIVER_PORT, port);

  const { code, output } = await runBash(script, 30_000);
  if (code !== 0) throw new Error(`the tour ended with ${code ?? "a kill after 30 s"}:\n${output}`);

  const { headers, body } = printedRequest(output, "POST /hooks");
  const queues = (await fanout.call("h1", "GET", "/v1/queues")).body.queues;
  const queue = queues.find((q: { name: string }) => q.name === "orders");
  const listener = (await fanout.call("h1", "GET", `/v1/queues/${queue.id}/listeners`)).body.listeners[0];
  const { secret } = (await fanout.call("h1", "GET", `/v1/queues/${queue.id}/listeners/${listener.id}/secret`)).body;
  const delivered = new Webhook(secret).verify(body, headers) as { id: string; data: unknown };
  expect(delivered.data).toEqual({ order_id: 7, email: "a@b.c" });
  expect(headers["webhook-id"]).toBe(delivered.id);
  expect(output).toContain(`"state": "acknowledged"`);
}, 60_000);
