/**
 * `fanout serve`: open and migrate the store, onboard an empty database, serve the API, run the delivery worker.
 * Shutdown (SIGTERM/SIGINT): stop accepting, let requests and deliveries in flight finish within the shutdown
 * bound, close the database cleanly, exit 0.
 */
import { loggableSettings, type Config } from "./config.ts";
import { openServedStore } from "./open-store.ts";
import { bootstrap, type Onboarded } from "./modules/organizations/onboarding.ts";
import { buildHandler } from "./http/app.ts";
import { serve } from "./http/server.ts";
import { loadTls } from "./http/tls.ts";
import { uiHandler } from "./ui/routes.ts";
import { startDelivery } from "./delivery/supervisor.ts";
import { startEventSweep } from "./modules/events/sweep.ts";
import { systemClock } from "./lib/clock.ts";
import { consoleLogger } from "./lib/log.ts";
import { warnOnLowFileLimit } from "./lib/file-limit.ts";
import { LogEvents } from "./lib/log-events.ts";
import { Metrics } from "./metrics/registry.ts";
import { buildCommit, fullVersion, VERSION } from "./version.ts";

export async function runServe(config: Config): Promise<number> {
  const log = consoleLogger({ format: config.logFormat });
  const events = new LogEvents(log);
  // The database first: a database this fanout must refuse is refused with one line, and nothing before it.
  const served = await openServedStore(config, log, events);
  warnOnLowFileLimit(log);
  const { store, location, description, tls: keep, delivery: reach } = served;
  const onboarded = await bootstrap(store, config.bootstrapOrg, config.bootstrapKey, systemClock.now());
  const tls = await loadTls(config, keep.dbPath, keep.temporary);
  const metrics = new Metrics(store, systemClock, VERSION);
  const observer = { batch: metrics.deliveries.add.bind(metrics.deliveries), restarted: () => metrics.workerRestarted() };
  const delivery = startDelivery({ ...reach, config, log, version: VERSION, observer, events });
  const stopSweep = startEventSweep(store, systemClock, log);
  let stopping = false;
  // Only the request Bun handed in knows its socket; copies made on the way (version prefix, a checked body) map to it.
  const originals = new WeakMap<Request, Request>();
  const originalOf = (r: Request) => originals.get(r) ?? r;
  const peerAddress = (r: Request) => server.requestIP(originalOf(r))?.address;
  const copyRequest = (r: Request, init: RequestInit) => {
    const copy = new Request(r.url, init);
    originals.set(copy, originalOf(r));
    return copy;
  };
  const deps = { store, config, clock: systemClock, log, version: VERSION, nudge: () => delivery.nudge(), peerAddress, copyRequest, metrics };
  const isStopping = () => stopping;
  const ui = uiHandler({ isStopping, log, portal: { store, clock: systemClock } });
  const server = serve(buildHandler(deps), { host: config.host, port: config.port, tls: tls.tls, isStopping, log, originals, ui });
  const url = `${tls.tls ? "https" : "http"}://${displayHost(config.host)}:${server.port}`;
  if (config.logFormat === "text") printWelcome(config, url, description, tls.description, onboarded);
  else if (onboarded?.generated) printOwnerKey(onboarded);
  events.started(url, { version: VERSION, commit: buildCommit(), database: location, tls_certificate: tls.description, ...loggableSettings(config) });

  return new Promise((resolve) => {
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      events.stopping(signal);
      const deadline = new Promise<void>((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
      await Promise.race([Promise.all([server.stop(false), delivery.stop(), stopSweep()]), deadline]);
      server.stop(true);
      await served.close();
      events.stopped();
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

/**
 * With JSON logs, stdout carries JSON too: the generated owner key, once, as one object. It is the only secret
 * the service ever prints, and never in a log line.
 */
function printOwnerKey(onboarded: Onboarded): void {
  console.log(JSON.stringify({ time: new Date().toISOString(), organization: onboarded.org.name, organization_id: onboarded.org.id,
    owner_key: onboarded.secret, note: "shown once; store it now — it holds every scope" }));
}

/** Everything a newcomer needs on the first start; the owner key only when it was generated, and only once. */
function printWelcome(config: Config, url: string, database: string, tls: string, onboarded: Onboarded | null): void {
  const lines = [`fanout ${fullVersion()} listening on ${url}`, `  database:     ${database}`, `  tls:          ${tls}`, `  dashboard:    ${url}/ui/`];
  if (onboarded) {
    lines.push(`  organization: ${onboarded.org.name} (${onboarded.org.id}) created`);
    if (onboarded.generated) lines.push(`  owner key:    ${onboarded.secret}`, "                (shown once; store it now — it holds every scope)");
    // A given key is not echoed: the line names the variable, in double quotes so the shell expands it.
    const header = onboarded.generated ? `'X-API-KEY: ${onboarded.secret}'` : `"X-API-KEY: $FANOUT_BOOTSTRAP_KEY"`;
    const intro = onboarded.generated ? "Create a first queue:" : "Create a first queue (with FANOUT_BOOTSTRAP_KEY set to the owner key you gave):";
    const insecure = config.tls && !config.tlsCert ? "-k " : "";
    lines.push("", intro, `  curl ${insecure}-X POST ${url}/v1/queues -H ${header} -H 'Content-Type: application/json' -d '{"name":"first"}'`);
  }
  console.log(lines.join("\n"));
}
