/**
 * The PostgreSQL server's CPU for the rows a published and delivered message needs at least, beside the ingest
 * baseline's single insert, with no HTTP and no fanout process: what the database alone costs under the delivery
 * contract, whatever the code around it does.
 *
 * - baseline: the bench baseline's insert (baseline-table.ts), 20 rows to a statement, two statements at a time;
 * - publish: on fanout's own tables, 20 messages to a statement, each with its delivery to one listener and its
 *   usage event, two statements at a time, committed as a publish is (waiting for the write-ahead log);
 * - deliver: those deliveries drained, 64 at a time by two connections, each batch leased (`FOR UPDATE SKIP
 *   LOCKED`, a token and an expiry) and then settled with its attempt, committed as the delivery worker commits
 *   (`synchronous_commit = off`).
 *
 * Per message: the database's CPU over each phase (its server processes, read from /proc) divided by the rows it
 * wrote. fanout's own statements do more than this (caps, the message's data read back for the request, the
 * listener's counters, NOTIFY), so this is a floor for them.
 */
import { SQL } from "bun";
import { benchDatabase, databaseCpu } from "./postgres-db.ts";
import { openPostgresStore } from "../../src/store/postgres/index.ts";
import { newId } from "../../src/lib/ids.ts";
import { messageBody } from "./payload.ts";
import { BASELINE_INSERT, BASELINE_TABLE, baselineColumns, type BaselineRow } from "./baseline-table.ts";

const BATCH = 20;
const CLAIM = 64;
const open = (url: string, settings: Record<string, string> = {}) => new SQL({ url, max: 4, connection: settings });
const rowsOf = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ id: newId("message", Date.now()), data: messageBody(), at: Date.now(), n: i })));

/** Two loops of `step` until `seconds` pass; how many rows they wrote, and the database's CPU (% of a core). */
async function metered(url: string, seconds: number, step: () => Promise<number>): Promise<{ rows: number; cpu: number; seconds: number }> {
  const cpu = databaseCpu(url);
  const started = performance.now();
  const end = started + seconds * 1000;
  let rows = 0;
  const loop = async () => {
    while (performance.now() < end) {
      const n = await step();
      if (n === 0) return;
      rows += n;
    }
  };
  await Promise.all([loop(), loop()]);
  return { rows, cpu: cpu(), seconds: (performance.now() - started) / 1000 };
}

/** Microseconds of database CPU per row written. */
const perRow = (m: { rows: number; cpu: number; seconds: number }) => (m.cpu / 100) * m.seconds * 1e6 / Math.max(1, m.rows);

export async function baselineFloor(seconds: number): Promise<number> {
  const url = await benchDatabase();
  const sql = open(url);
  try {
    for (const ddl of BASELINE_TABLE) await sql.unsafe(ddl);
    const body = messageBody();
    return perRow(await metered(url, seconds, async () => {
      const rows = Array.from({ length: BATCH }, (): BaselineRow => [newId("message", Date.now()), "org_bench", "q_bench", null, body, Date.now()]);
      await sql.unsafe(BASELINE_INSERT, baselineColumns(rows));
      return BATCH;
    }));
  } finally {
    await sql.close();
  }
}

export async function fanoutFloor(seconds: number): Promise<{ publish: number; deliver: number; deliveries: number }> {
  const url = await benchDatabase();
  const store = await openPostgresStore(url, { pool: 4, role: "bench" });
  const actor = { keyId: "key_bench", keyName: "bench" };
  const org = (await store.orgs.create("com.example.floor", Date.now())).id;
  const queue = await store.queues.create(org, { name: "floor", schema: null, schemaId: null }, Date.now(), actor);
  const listener = await store.listeners.create(org, queue.id,
    { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "whsec_floor" }, Date.now(), actor);
  await store.close();
  const sql = open(url);
  const worker = open(url, { synchronous_commit: "off" });
  try {
    const [{ seq }] = await sql`SELECT seq FROM listeners WHERE id = ${listener.id}`;
    const publish = await metered(url, seconds, async () => {
      await sql.unsafe(`WITH input AS (SELECT * FROM json_to_recordset($1::text::json) AS t(id text, data text, at int8, n int)),
        m AS (INSERT INTO messages (id, org_id, queue_id, name, data, created_at) SELECT id, $2, $3, NULL, data, at FROM input RETURNING seq, created_at),
        d AS (INSERT INTO deliveries (org_id, message_seq, listener_seq, state, attempt, next_attempt_at, created_at, updated_at)
          SELECT $2, m.seq, $4, 'pending', 0, m.created_at, m.created_at, m.created_at FROM m RETURNING 1)
        INSERT INTO events (id, org_id, type, stored_at, queue_id, message_id)
          SELECT 'evt_' || i.at || '_' || i.n || '_' || i.id, $2, 'message_published', i.at, $3, i.id FROM input i`,
        [rowsOf(BATCH), org, queue.id, seq]);
      return BATCH;
    });
    // As fanout's housekeeping leader does when autovacuum has not yet: a claim planned without statistics sorts
    // every due row (docs/postgres.md).
    await sql.unsafe("ANALYZE deliveries");
    const deliver = await metered(url, 3600, async () => {
      const now = Date.now();
      const leased: { id: string }[] = await worker.unsafe(`WITH c AS (SELECT id FROM deliveries WHERE state = 'pending' AND next_attempt_at <= $1
          ORDER BY next_attempt_at, id LIMIT ${CLAIM} FOR UPDATE SKIP LOCKED)
        UPDATE deliveries d SET state = 'sending', lease_owner = 'floor', lease_expires_at = $1 + 60000, updated_at = $1
        FROM c WHERE d.id = c.id AND d.state = 'pending' RETURNING d.id`, [now]);
      if (leased.length === 0) return 0;
      await worker.unsafe(`WITH s AS (UPDATE deliveries SET state = 'acknowledged', attempt = 1, lease_owner = NULL, lease_expires_at = NULL,
          last_status = 200, updated_at = $2 WHERE id = ANY($1::int8[]) AND state = 'sending' AND lease_owner = 'floor' RETURNING id)
        INSERT INTO attempts (delivery_id, attempt, cycle, attempted_at, status_code, duration_ms) SELECT id, 1, 1, $2, 200, 1 FROM s`,
        [leased.map((r) => r.id), now]);
      return leased.length;
    });
    return { publish: perRow(publish), deliver: perRow(deliver), deliveries: deliver.rows };
  } finally {
    await sql.close();
    await worker.close();
  }
}
