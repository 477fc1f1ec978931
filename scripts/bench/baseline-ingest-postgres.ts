/**
 * Ingest baseline on PostgreSQL, run as its own process: a bare Bun.serve over TLS (HTTP/1.1 and HTTP/2 by ALPN)
 * that parses the JSON body, serializes `data` as fanout stores it, and inserts a row shaped like fanout's
 * `messages` row (same columns, same indexes) with the batching fanout's store uses (store/postgres/writer.ts):
 * the requests parsed in one event-loop turn share one multi-row INSERT, two batches at most in flight, each
 * request answered after its statement committed. No auth, no validation, no deliveries, no events: the ratio to it is
 * what fanout's own work costs on PostgreSQL.
 *
 * usage: bun baseline-ingest-postgres.ts --db <postgres url> --ttl <ms>; prints `listening on <url>`.
 */
import { selfSigned } from "../../src/http/tls.ts";
import { newId } from "../../src/lib/ids.ts";
import { openClient } from "../../src/store/postgres/client.ts";
import { parsePostgresUrl } from "../../src/store/postgres/url.ts";
import { argMap, exitWithParent } from "./child-life.ts";
import { BASELINE_INSERT, BASELINE_TABLE, baselineColumns, type BaselineRow } from "./baseline-table.ts";

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 600_000));

// Commits as fanout's publishes do: waiting for the server's write-ahead log (PostgreSQL's default).
const sql = openClient(parsePostgresUrl(args.get("db")!), 4, "baseline");
for (const ddl of BASELINE_TABLE) await sql.unsafe(ddl);

type Pending = { row: BaselineRow; done: (error?: unknown) => void };
let pending: Pending[] = [];
let scheduled = false;
let inFlight = 0;
/** As fanout's writer: two batches at most in flight, what arrives meanwhile joins the next. */
const BATCHES_IN_FLIGHT = 2;

async function store(batch: Pending[]): Promise<void> {
  try {
    await sql.unsafe(BASELINE_INSERT, baselineColumns(batch.map((p) => p.row)));
    for (const p of batch) p.done();
  } catch (e) {
    for (const p of batch) p.done(e);
  }
}

function pump(): void {
  while (pending.length > 0 && inFlight < BATCHES_IN_FLIGHT) {
    const batch = pending.splice(0, 512);
    inFlight++;
    void store(batch).finally(() => {
      inFlight--;
      pump();
    });
  }
}

function commit(row: BaselineRow): Promise<void> {
  return new Promise((resolve, reject) => {
    pending.push({ row, done: (e) => (e ? reject(e) : resolve()) });
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      pump();
    });
  });
}

const PATH = /^\/v1\/queues\/([^/]+)\/messages$/;

async function publish(request: Request, queueId: string): Promise<Response> {
  let body: { name?: string; data?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    return Response.json({ title: "Bad Request", status: 400 }, { status: 400 });
  }
  const id = newId("message", Date.now());
  await commit([id, "org_bench", queueId, body.name ?? null, JSON.stringify(body.data ?? null), Date.now()]);
  const self = `${new URL(request.url).origin}/v1/queues/${queueId}/messages/${id}`;
  return Response.json({ message: { id, name: body.name ?? null },
    _links: { self: { href: self }, queue: { href: self.slice(0, self.indexOf("/messages/")) }, attempts: { href: `${self}/attempts` } } });
}

const pair = await selfSigned(new Date());
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: pair,
  http2: true,
  maxRequestBodySize: 2 * 1024 * 1024,
  fetch(request) {
    const path = new URL(request.url).pathname;
    const match = request.method === "POST" ? PATH.exec(path) : null;
    if (match) return publish(request, match[1]!);
    if (path === "/healthz") return Response.json({ status: "ok" });
    return Response.json({ title: "Not Found", status: 404 }, { status: 404 });
  },
} as Parameters<typeof Bun.serve>[0]);
console.log(`baseline-ingest-postgres listening on https://127.0.0.1:${server.port}`);

process.on("SIGTERM", async () => {
  server.stop(true);
  await sql.close();
  process.exit(0);
});
