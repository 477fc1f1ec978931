/**
 * `fanout serve`: open and migrate the store, onboard an empty database, serve the API, run the delivery worker.
 * Shutdown (SIGTERM/SIGINT): stop accepting, let requests and deliveries in flight finish within the shutdown
 * bound, close the database cleanly, exit 0.
 */
import { resolve } from "node:path";
import type { Config } from "./config.ts";
import { openSqliteStore } from "./store/sqlite/index.ts";
import { bootstrap, type Onboarded } from "./modules/organizations/onboarding.ts";
import { buildHandler } from "./http/app.ts";
import { serve } from "./http/server.ts";
import { loadTls } from "./http/tls.ts";
import { uiRoutes } from "./ui/routes.ts";
import { startDelivery } from "./delivery/supervisor.ts";
import { startEventSweep } from "./modules/events/sweep.ts";
import { systemClock } from "./lib/clock.ts";
import { consoleLogger } from "./lib/log.ts";
import { VERSION } from "./version.ts";

export async function runServe(config: Config): Promise<number> {
  const log = consoleLogger();
  const store = openSqliteStore(config.db, { durability: config.durability, log, checkpoints: "thread" });
  const onboarded = await bootstrap(store, config.bootstrapOrg, config.bootstrapKey, systemClock.now());
  const tls = await loadTls(config, store.path, config.db === ":memory:");
  const delivery = startDelivery({ dbPath: store.path, config, log, version: VERSION, lockSignal: store.lockSignal.buffer });
  const stopSweep = startEventSweep(store, systemClock, log);
  let stopping = false;
  const originals = new WeakMap<Request, Request>();
  const peerAddress = (r: Request) => server.requestIP(originals.get(r) ?? r)?.address;
  const deps = { store, config, clock: systemClock, log, version: VERSION, nudge: () => delivery.nudge(), peerAddress };
  const isStopping = () => stopping;
  const routes = uiRoutes({ isStopping, log });
  const server = serve(buildHandler(deps), { host: config.host, port: config.port, tls: tls.tls, isStopping, log, originals, routes });
  const url = `${tls.tls ? "https" : "http"}://${displayHost(config.host)}:${server.port}`;
  printWelcome(config, url, store.path, tls.description, onboarded);

  return new Promise((resolve) => {
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      const deadline = new Promise<void>((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
      await Promise.race([Promise.all([server.stop(false), delivery.stop(), stopSweep()]), deadline]);
      server.stop(true);
      await store.close();
      log.info("stopped");
      resolve(0);
    };
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
  });
}

function displayHost(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}

/** Everything a newcomer needs on the first start; the owner key only when it was generated, and only once. */
function printWelcome(config: Config, url: string, dbPath: string, tls: string, onboarded: Onboarded | null): void {
  const lines = [`fanout ${VERSION} listening on ${url}`, `  database:     ${config.db === ":memory:" ? "in memory (throwaway)" : resolve(dbPath)} (durability ${config.durability})`, `  tls:          ${tls}`, `  dashboard:    ${url}/ui/`];
  if (onboarded) {
    lines.push(`  organization: ${onboarded.org.name} (${onboarded.org.id}) created`);
    if (onboarded.generated) lines.push(`  owner key:    ${onboarded.secret}`, "                (shown once; store it now — it holds every scope)");
    const key = onboarded.generated ? onboarded.secret : "$FANOUT_BOOTSTRAP_KEY";
    const insecure = config.tls && !config.tlsCert ? "-k " : "";
    lines.push("", "Create a first queue:", `  curl ${insecure}-X POST ${url}/v1/queues -H 'X-API-KEY: ${key}' -H 'Content-Type: application/json' -d '{"name":"first"}'`);
  }
  console.log(lines.join("\n"));
}
