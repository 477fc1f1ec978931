/**
 * Ingest baseline, run as its own process: the least this stack can do for a publish. A bare Bun.serve over TLS
 * (HTTP/1.1 and HTTP/2 by ALPN, the same self-signed certificate approach as fanout) that parses the JSON body,
 * serializes `data` as fanout stores it, and commits a row shaped like fanout's `messages` row (same indexes) to
 * SQLite in WAL mode with synchronous=NORMAL (or FULL), with group commit: requests whose bodies are parsed in
 * the same event-loop turn share one IMMEDIATE transaction, and each is answered only after that commit.
 * No auth, no validation, no fan-out rows, no events: the ratio to it is what fanout's own work costs.
 *
 * usage: bun baseline-ingest.ts --db <file> --sync normal|full --ttl <ms>; prints `listening on <url>`.
 */
import { Database } from "bun:sqlite";
import { selfSigned } from "../../src/http/tls.ts";
import { newId } from "../../src/lib/ids.ts";
import { argMap, exitWithParent } from "./child-life.ts";

const args = argMap(process.argv.slice(2));
exitWithParent(Number(args.get("ttl") ?? 600_000));

const db = new Database(args.get("db") ?? "baseline.db", { create: true, strict: true });
db.run("PRAGMA journal_mode = WAL");
db.run(`PRAGMA synchronous = ${args.get("sync") === "full" ? "FULL" : "NORMAL"}`);
db.run("PRAGMA busy_timeout = 5000");
db.run(`CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
  org_id TEXT NOT NULL, queue_id TEXT NOT NULL, name TEXT, data TEXT NOT NULL, created_at INTEGER NOT NULL)`);
db.run("CREATE INDEX IF NOT EXISTS messages_queue ON messages (queue_id, seq)");
db.run("CREATE INDEX IF NOT EXISTS messages_org ON messages (org_id, seq)");
const insert = db.prepare("INSERT INTO messages (id, org_id, queue_id, name, data, created_at) VALUES (?, ?, ?, ?, ?, ?)");

type Row = [string, string, string, string | null, string, number];
type Pending = { row: Row; done: (error?: unknown) => void };
let batch: Pending[] = [];
let scheduled = false;

// One transaction for everything that arrived in this turn; setImmediate runs after the turn's I/O callbacks.
const commitBatch = db.transaction((rows: Pending[]) => {
  for (const p of rows) insert.run(...p.row);
});

function flush(): void {
  scheduled = false;
  const rows = batch;
  batch = [];
  try {
    commitBatch.immediate(rows);
    for (const p of rows) p.done();
  } catch (e) {
    for (const p of rows) p.done(e);
  }
}

function commit(row: Row): Promise<void> {
  return new Promise((resolve, reject) => {
    batch.push({ row, done: (e) => (e ? reject(e) : resolve()) });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
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
  const id = newId("message", Date.now()); // the same id scheme as fanout's, so the rows cost the same
  await commit([id, "org_bench", queueId, body.name ?? null, JSON.stringify(body.data ?? null), Date.now()]);
  // The same response shape and size as fanout's, so both send the same bytes back.
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
console.log(`baseline-ingest listening on https://127.0.0.1:${server.port}`);

process.on("SIGTERM", () => {
  server.stop(true);
  db.close();
  process.exit(0);
});
