/**
 * A PostgreSQL server of a test's own (initdb into a temporary directory, pg_ctl on a free port), for what must
 * not be done to the shared test server: stopping and starting it under a running fanout. Run as the `postgres`
 * user when the tests run as root (initdb refuses root). Skipped without the binaries, except under CI=true.
 */
import { existsSync, mkdtempSync, chownSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

const BIN = process.env.FANOUT_TEST_PG_BIN || "/usr/lib/postgresql/15/bin";

export function privatePostgresAvailable(): boolean {
  if (existsSync(join(BIN, "initdb")) && existsSync(join(BIN, "pg_ctl"))) return true;
  if (process.env.CI === "true") throw new Error(`no PostgreSQL binaries in ${BIN} (FANOUT_TEST_PG_BIN); under CI=true the restart test must run`);
  console.warn(`skipping the PostgreSQL restart test: no initdb and pg_ctl in ${BIN} (FANOUT_TEST_PG_BIN)`);
  return false;
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

export class PrivatePostgres {
  private constructor(readonly dir: string, readonly port: number) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async start(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), "fanout-pg-"));
    if (userInfo().uid === 0) chownSync(dir, Number(await run(["id", "-u", "postgres"])), Number(await run(["id", "-g", "postgres"])));
    const pg = new PrivatePostgres(dir, await freePort());
    await pg.as(["initdb", "-D", `${dir}/data`, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
    await pg.startServer();
    return pg;
  }

  /** Starts the server (again) and waits until it accepts connections. */
  async startServer(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.as(["pg_ctl", "-D", `${this.dir}/data`, "-o", options, "-l", `${this.dir}/log`, "-w", "start"]);
  }

  /** Stops the server the way a restart does (fast shutdown: sessions are ended). */
  async stopServer(): Promise<void> {
    await this.as(["pg_ctl", "-D", `${this.dir}/data`, "-m", "fast", "-w", "stop"]);
  }

  async destroy(): Promise<void> {
    await this.stopServer().catch(() => {}); // stopped already
    rmSync(this.dir, { recursive: true, force: true });
  }

  private as(command: string[]): Promise<string> {
    const [program, ...args] = command;
    const full = [join(BIN, program!), ...args];
    return run(userInfo().uid === 0 ? ["runuser", "-u", "postgres", "--", ...full] : full);
  }
}

async function run(command: string[]): Promise<string> {
  const proc = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}: ${err || out}`);
  return out.trim();
}
