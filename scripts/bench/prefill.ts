/**
 * Pre-fills a fanout database (made by the binary's own migrations, with its organization, queues and listeners
 * created through the API) with published messages, by SQL, while no server runs on it. Publishing a million
 * messages through the API would take minutes; the rows written here are the ones the publish transaction
 * and the delivery worker's fan-out write (a `messages` row, and one `deliveries` row per listener, pending and
 * due now, with the fan-out cursor past them: store/sqlite/fanout.ts), so the server starts on the state a real
 * backlog leaves. Deliveries to a down listener are
 * written as the worker leaves them once it has held them (pending, next_attempt_at NULL, held_since set: see
 * the deliveries schema), because "deliveries that wait" is that steady state; a database without the
 * held_since column gets them due now, for the worker to hold. Usage events are not written: they are kept
 * 24 hours and read by /events only, not on the publish or delivery path.
 */
import { Database } from "bun:sqlite";

const CHUNK = 100_000; // rows per transaction: bounds the rollback journal and keeps memory flat

export type Fill = { queueId: string; listenerId: string; messages: number; data: string; held?: boolean };

/** Inserts `messages` messages into the queue, each with one pending delivery to the listener. */
function fillQueue(db: Database, f: Fill, now: number): void {
  const queue = db.query("SELECT org_id FROM queues WHERE id = ?").get(f.queueId) as { org_id: string } | null;
  const listener = db.query("SELECT seq FROM listeners WHERE id = ?").get(f.listenerId) as { seq: number } | null;
  if (!queue || !listener) throw new Error(`prefill: queue ${f.queueId} or listener ${f.listenerId} not found`);
  const messages = db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
    INSERT INTO messages (id, org_id, queue_id, name, data, created_at)
    SELECT 'msg_' || substr(hex(randomblob(10)), 1, 20), ?, ?, 'prefill', ?, ? FROM n`);
  const held = f.held && hasHeldColumn(db);
  const deliveries = db.prepare(held
    ? `INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, held_since, created_at, updated_at)
       SELECT org_id, seq, $listener, 'pending', 0, NULL, $now, $now, $now FROM messages WHERE queue_id = $queue AND seq > $after`
    : `INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at)
       SELECT org_id, seq, $listener, 'pending', 0, $now, $now, $now FROM messages WHERE queue_id = $queue AND seq > $after`);
  const maxSeq = db.prepare("SELECT coalesce(max(seq), 0) AS seq FROM messages");
  for (let done = 0; done < f.messages; done += CHUNK) {
    const n = Math.min(CHUNK, f.messages - done);
    db.transaction(() => {
      const before = (maxSeq.get() as { seq: number }).seq;
      messages.run(n, queue.org_id, f.queueId, f.data, now);
      deliveries.run({ listener: listener.seq, now, queue: f.queueId, after: before });
    }).immediate();
  }
}

function hasHeldColumn(db: Database): boolean {
  return (db.query("SELECT name FROM pragma_table_info('deliveries')").all() as { name: string }[]).some((c) => c.name === "held_since");
}

/** A listener is `down` after three failed probes; its deliveries then wait without using retries. */
function markDown(db: Database, listenerId: string, now: number): void {
  db.run(`UPDATE listeners SET liveness_state = 'down', failure_count = 3, failures_in_row = 3, down_since = ?, next_probe_at = ?
    WHERE id = ?`, [now, now, listenerId]);
}

export function prefill(path: string, fills: Fill[], downListeners: string[]): { seconds: number; bytes: number } {
  const started = performance.now();
  const db = new Database(path, { strict: true });
  // Setup speed only: a rollback journal without syncs. The file returns to WAL, as the server expects it.
  db.run("PRAGMA journal_mode = DELETE");
  db.run("PRAGMA synchronous = OFF");
  db.run("PRAGMA foreign_keys = ON");
  const now = Date.now();
  for (const f of fills) fillQueue(db, f, now);
  for (const id of downListeners) markDown(db, id, now);
  // The deliveries are written: the worker must not fan these messages out again. (Older binaries have no cursor.)
  if (db.query("SELECT 1 FROM sqlite_master WHERE name = 'fanout'").get()) {
    db.run("INSERT OR REPLACE INTO fanout (id, message_seq) SELECT 1, coalesce(max(seq), 0) FROM messages");
  }
  db.run("PRAGMA journal_mode = WAL");
  db.close();
  return { seconds: (performance.now() - started) / 1000, bytes: Bun.file(path).size };
}

export type FinalFill = { queueId: string; listenerId: string; messages: number; data: string; state: "acknowledged" | "missed"; createdAt: number };

/**
 * Messages whose one delivery is final (acknowledged or missed), made at `createdAt`, with ids that start with that
 * time as the server's do (lib/ids.ts: retention and replay find a window of time through the ids), the cursor
 * past them. Within that one millisecond the ids follow the messages' order, as the ids of messages published
 * over days would: a sweep walks the ids in order, and ids in random order would make it read and write pages all
 * over the file for every chunk, which no server's own ids do. Written while no server runs on the file.
 */
export function prefillFinal(path: string, f: FinalFill, idPrefix: string): { seconds: number; bytes: number } {
  const started = performance.now();
  const db = new Database(path, { strict: true });
  db.run("PRAGMA journal_mode = DELETE");
  db.run("PRAGMA synchronous = OFF");
  const queue = db.query("SELECT org_id FROM queues WHERE id = ?").get(f.queueId) as { org_id: string } | null;
  const listener = db.query("SELECT seq FROM listeners WHERE id = ?").get(f.listenerId) as { seq: number } | null;
  if (!queue || !listener) throw new Error(`prefill: queue ${f.queueId} or listener ${f.listenerId} not found`);
  const messages = db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
    INSERT INTO messages (id, org_id, queue_id, name, data, created_at)
    SELECT ? || printf('%08d', ? + i) || lower(hex(randomblob(6))), ?, ?, 'prefill', ?, ? FROM n`);
  const deliveries = db.prepare(`INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, last_status,
      created_at, updated_at)
    SELECT org_id, seq, $listener, $state, 1, NULL, CASE $state WHEN 'acknowledged' THEN 204 ELSE 503 END, $at, $at
    FROM messages WHERE queue_id = $queue AND seq > $after`);
  const maxSeq = db.prepare("SELECT coalesce(max(seq), 0) AS seq FROM messages");
  for (let done = 0; done < f.messages; done += CHUNK) {
    const n = Math.min(CHUNK, f.messages - done);
    db.transaction(() => {
      const before = (maxSeq.get() as { seq: number }).seq;
      messages.run(n, idPrefix, done, queue.org_id, f.queueId, f.data, f.createdAt);
      deliveries.run({ listener: listener.seq, state: f.state, at: f.createdAt, queue: f.queueId, after: before });
    }).immediate();
  }
  db.run("INSERT OR REPLACE INTO fanout (id, message_seq) SELECT 1, coalesce(max(seq), 0) FROM messages");
  db.run("PRAGMA journal_mode = WAL");
  db.close();
  return { seconds: (performance.now() - started) / 1000, bytes: Bun.file(path).size };
}
