/**
 * End-to-end harness: the real server (`bun src/main.ts serve`, or the compiled binary) as a child process on
 * 127.0.0.1, port 0, HTTPS with its self-signed certificate, a temporary database file; clients over HTTP/1.1
 * (node:https, ALPN http/1.1) and HTTP/2 (node:http2, one session per server).
 */
import { join } from "node:path";
import https from "node:https";
import http2 from "node:http2";
import { tempFolder } from "../support/temp.ts";
import { createTestDatabase, postgresAvailable } from "../support/postgres.ts";
import { waitFor } from "../support/wait.ts";

export { waitFor };

export type Reply = { status: number; headers: Headers; body: any; text: string };
export type Proto = "h1" | "h2";
export type CallOptions = { body?: unknown; raw?: string; key?: string | null; headers?: Record<string, string> };
export type Fanout = {
  url: string;
  pid: number;
  key: string;
  dbPath: string;
  env: Record<string, string>;
  call(proto: Proto, method: string, path: string, opts?: CallOptions): Promise<Reply>;
  stop(): Promise<number>;
  kill(): void;
  output(): string;
};

export const PROTOS: Proto[] = ["h1", "h2"];
/**
 * The store the servers use unless a test names a database: FANOUT_TEST_BACKEND=postgres gives each server a
 * database of its own on the test server (test/support/postgres.ts), dropped after the run.
 */
export const BACKEND: "sqlite" | "postgres" = process.env.FANOUT_TEST_BACKEND === "postgres" ? "postgres" : "sqlite";
export const ROOT = join(import.meta.dir, "..", "..");
const BUN = process.execPath;

/** Removed after the whole run (test/support/temp.ts). */
export function tempDir(prefix = "fanout-test-"): string {
  return tempFolder(prefix);
}

/** Runs a CLI command (`bun src/main.ts …`) to completion. */
export async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

export type StartOptions = { env?: Record<string, string>; args?: string[]; db?: string; binary?: string };

/** A fresh database for one server of the current backend: a file path, or a PostgreSQL URL. */
export async function freshDatabase(): Promise<string> {
  if (BACKEND === "sqlite") return join(tempDir(), "fanout.db");
  if (!(await postgresAvailable())) throw new Error("FANOUT_TEST_BACKEND=postgres, but the test server cannot be reached");
  return (await createTestDatabase()).url;
}

export async function startFanout(opts: StartOptions = {}): Promise<Fanout> {
  const dbPath = opts.db ?? (await freshDatabase());
  const key = opts.env?.FANOUT_BOOTSTRAP_KEY ?? `test-key-${crypto.randomUUID()}`;
  const env: Record<string, string> = {
    FANOUT_HOST: "127.0.0.1",
    FANOUT_PORT: "0",
    FANOUT_DB: dbPath,
    FANOUT_BOOTSTRAP_KEY: key,
    FANOUT_ALLOW_TARGETS: "127.0.0.1/32",
    FANOUT_SHUTDOWN_TIMEOUT: "3s",
    ...opts.env,
  };
  const cmd = opts.binary ? [opts.binary, "serve", ...(opts.args ?? [])] : [BUN, join(ROOT, "src/main.ts"), "serve", ...(opts.args ?? [])];
  const proc = Bun.spawn(cmd, { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  void collect(proc.stdout);
  void collect(proc.stderr);
  const url = await waitFor(() => output.match(/listening on ([^\s"]+)/)?.[1], 20_000, () => `server did not start:\n${output}`, proc);
  const port = new URL(url).port;
  const base = `${new URL(url).protocol}//127.0.0.1:${port}`;
  const clients = new Clients(base);
  await waitFor(async () => (await clients.call("h1", "GET", "/healthz", {})).status === 200 || undefined, 10_000, () => `healthz never answered:\n${output}`);
  return {
    url: base,
    pid: proc.pid,
    key,
    dbPath,
    env,
    call: (proto, method, path, o = {}) => clients.call(proto, method, path, { ...o, key: o.key === undefined ? key : o.key }),
    async stop() {
      clients.close();
      proc.kill("SIGTERM");
      return proc.exited;
    },
    kill() {
      clients.close();
      proc.kill("SIGKILL");
    },
    output: () => output,
  };
}

class Clients {
  private session: http2.ClientHttp2Session | null = null;
  private agent: https.Agent;
  constructor(private base: string) {
    this.agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] } as https.AgentOptions);
  }

  headersFor(opts: CallOptions): Record<string, string> {
    const headers: Record<string, string> = { accept: "application/json", ...(opts.key ? { "x-api-key": opts.key } : {}) };
    if (opts.body !== undefined || opts.raw !== undefined) headers["content-type"] = "application/json";
    return { ...headers, ...opts.headers };
  }

  call(proto: Proto, method: string, path: string, opts: CallOptions): Promise<Reply> {
    const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
    const headers = this.headersFor(opts);
    return proto === "h1" ? this.h1(method, path, headers, payload) : this.h2(method, path, headers, payload);
  }

  private h1(method: string, path: string, headers: Record<string, string>, payload?: string): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const isHttps = this.base.startsWith("https");
      const mod = isHttps ? https : require("node:http");
      const req = mod.request(`${this.base}${path}`, { method, headers, agent: isHttps ? this.agent : undefined }, (res: any) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve(reply(res.statusCode, res.headers, text)));
      });
      req.on("error", reject);
      req.end(payload);
    });
  }

  private h2(method: string, path: string, headers: Record<string, string>, payload?: string): Promise<Reply> {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = http2.connect(this.base, { rejectUnauthorized: false });
      this.session.on("error", () => (this.session = null));
    }
    const session = this.session;
    return new Promise((resolve, reject) => {
      const req = session.request({ ":method": method, ":path": path, ...headers });
      let status = 0;
      let raw: Record<string, unknown> = {};
      let text = "";
      req.setEncoding("utf8");
      req.on("response", (h) => ((status = Number(h[":status"])), (raw = h)));
      req.on("data", (d: string) => (text += d));
      req.on("end", () => resolve(reply(status, raw, text)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  close() {
    this.session?.close();
    this.agent.destroy();
  }
}

function reply(status: number, raw: Record<string, unknown>, text: string): Reply {
  const headers = new Headers();
  for (const [k, v] of Object.entries(raw)) if (!k.startsWith(":") && v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : String(v));
  let body: any = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined; // not JSON: tests assert on `text` or on the parsed body being absent
  }
  return { status, headers, body, text };
}
