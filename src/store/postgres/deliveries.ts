/**
 * DeliveryStore over PostgreSQL (states and fencing: store/deliveries.ts; the SQL: delivery-sql.ts). Any number of
 * workers, in any number of instances, claim from one table: a claim locks its window of due rows with
 * `FOR UPDATE SKIP LOCKED`, so concurrent claims take disjoint rows, and leases them under a token that every
 * later transition must present. This is the worker's hot path: raw statements on the client, one round trip
 * each, no transaction around them.
 */
import type { SQL } from "bun";
import { idFloor, randomBase62 } from "../../lib/ids.ts";
import { replayChunk } from "./replays.ts";
import { storable } from "./text.ts";
import { num, numOrNull } from "./client.ts";
import { isRetryable, storeError } from "./errors.ts";
import * as Q from "./delivery-sql.ts";
import { inTransaction, pausing, reportMissed, reportSettled, reportStateChange, reported } from "./worker-events.ts";
import { slotOf, type Claim, type ClaimedDelivery, type ClaimRequest, type Completion, type DeliveryStore, type Lease, type MissedDelivery, type ProbeTarget } from "../deliveries.ts";

const MISSED_WHILE_DOWN = "listener down for longer than the retry schedule";

const RETRIES = 3;
const FAIR_PAUSE_MS = 50;

type DetailRow = {
  seen: string; next_due: string | null; id: string | null; due: string; attempt: number; listener_seq: string; message_id: string;
  message_name: string | null; data: string; created_at: string; listener_id: string; org_id: string; notify_url: string; secret: string;
  previous_secret: string | null; previous_secret_until: string | null; held: boolean; queue_id: string; queue_name: string;
  headers: string | null; concurrency: number | null; rate_limit: number | null; fifo: boolean;
};

type Listener = ClaimedDelivery["listener"];
type Message = ClaimedDelivery["message"];

function claimedListener(r: DetailRow, now: number): Listener {
  const secrets = [r.secret];
  const until = numOrNull(r.previous_secret_until);
  if (r.previous_secret && until !== null && until > now) secrets.push(r.previous_secret);
  return {
    seq: num(r.listener_seq), id: r.listener_id, orgId: r.org_id, notifyUrl: r.notify_url, secrets, held: r.held,
    headers: r.headers === null ? null : JSON.parse(r.headers),
    concurrency: r.concurrency, rateLimit: r.rate_limit, fifo: r.fifo,
  };
}

function claimedMessage(r: DetailRow): Message {
  return { id: r.message_id, name: r.message_name, queue: { id: r.queue_id, name: r.queue_name }, data: r.data, createdAt: num(r.created_at) };
}

/**
 * The rows leased, oldest due first as chosen (RETURNING gives no order). Rows of one listener share its object,
 * and rows of one message its object, as on SQLite: send.ts builds a body and writes headers out once per object.
 */
function leasedRows(rows: DetailRow[], token: string, now: number): ClaimedDelivery[] {
  const listeners = new Map<string, Listener>();
  const messages = new Map<string, Message>();
  return rows
    .filter((r) => r.id !== null)
    .sort((a, b) => num(a.due) - num(b.due) || num(a.id) - num(b.id))
    .map((r) => ({
      id: num(r.id),
      token,
      attempt: r.attempt,
      listener: listeners.getOrInsertComputed(r.listener_seq, () => claimedListener(r, now)),
      startAt: null,
      message: messages.getOrInsertComputed(r.message_id, () => claimedMessage(r)),
    }));
}

export function deliveryStore(client: SQL): DeliveryStore {
  // Tokens must never repeat, even across store instances that share an owner name (tests, restarts).
  const nonce = randomBase62(6);
  let claims = 0;
  let fairAfter = 0;
  /** One statement, again after a deadlock with another instance (it changed nothing); errors mapped. */
  const run = async <T = any>(text: string, params: unknown[]): Promise<T[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await client.unsafe(text, params);
      } catch (e) {
        if (attempt >= RETRIES || !isRetryable(e)) throw storeError(e);
      }
    }
  };
  const count = async (text: string, params: unknown[]) => ((await run(text, params)) as unknown as { count: number }).count;
  /** A transaction, again after a deadlock with another instance (it committed nothing); errors mapped. */
  const retried = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (attempt >= RETRIES || !isRetryable(e)) throw storeError(e);
      }
    }
  };

  /** The settlement statements' input: one JSON text (delivery-sql.ts). */
  const settleInput = (items: Completion[]) => JSON.stringify(items.map((c, ord) => ({
    ord, id: c.id, token: c.token, state: c.next.state, attempt: c.attempt, next_at: c.next.state === "pending" ? c.next.at : null,
    status: c.record.statusCode, error: storable(c.record.error), attempted_at: c.record.attemptedAt, duration: Math.round(c.record.durationMs),
    response: storable(c.record.response), listener_seq: c.listenerSeq, message_id: c.messageId,
  })));
  const settledOf = (items: Completion[], ords: number[]) => {
    const settled = new Set(ords.map(Number));
    return items.map((_, i) => settled.has(i));
  };

  async function settle(items: Completion[], now: number): Promise<boolean[]> {
    if (items.length === 0) return [];
    if (items.some(reported)) return settleReporting(items, now);
    const rows = await run<{ ord: number }>(Q.SETTLE, Q.bind(Q.SETTLE_PARAMS, { input: settleInput(items), now }));
    return settledOf(items, rows.map((r) => r.ord));
  }

  /** A settlement with a missed delivery or a 410 in it: in one transaction with the events it reports. */
  function settleReporting(items: Completion[], now: number): Promise<boolean[]> {
    return retried(() => inTransaction(client, async (exec) => {
      const paused = await pausing(exec, items);
      const rows = await exec(Q.SETTLE, Q.bind(Q.SETTLE_PARAMS, { input: settleInput(items), now }));
      const settled = settledOf(items, rows.map((r) => r.ord));
      await reportSettled(exec, items, settled, paused, now);
      return settled;
    }));
  }

  /**
   * Start slots for the claimed rows of rate-limited listeners (delivery-sql.ts RESERVE_SLOTS), in claim order. A
   * crash before it leaves those rows leased without slots: they are sent again once their lease expires.
   */
  async function reserveSlots(claimed: ClaimedDelivery[], now: number): Promise<void> {
    const paced = new Map<number, ClaimedDelivery[]>();
    for (const c of claimed) if (c.listener.rateLimit !== null) paced.set(c.listener.seq, [...(paced.get(c.listener.seq) ?? []), c]);
    if (paced.size === 0) return;
    const rows = await run<{ seq: string; rate_from: string; rate_limit: number }>(Q.RESERVE_SLOTS, Q.bind(Q.RESERVE_SLOTS_PARAMS, {
      seqs: [...paced.keys()], counts: [...paced.values()].map((l) => l.length), now,
    }));
    for (const r of rows) paced.get(num(r.seq))!.forEach((c, i) => (c.startAt = slotOf(num(r.rate_from), i, r.rate_limit)));
  }

  /** Claims, after settling `items` in the same statement when there are any. */
  async function claim(req: ClaimRequest, now: number, items: Completion[] = []): Promise<Claim & { settled: boolean[] }> {
    // Apart when a FIFO line's head is among them: the claim of the same statement would not see it settled.
    if (items.some(reported) || items.some((c) => c.fifo)) {
      const settled = await settle(items, now);
      return { ...(await claim(req, now)), settled };
    }
    const token = `${req.owner}:${nonce}.${++claims}`;
    const expires = now + req.leaseMs;
    const busy = (extra: ClaimedDelivery[]) => {
      const counts = new Map(req.busy);
      for (const c of extra) counts.set(c.listener.seq, (counts.get(c.listener.seq) ?? 0) + 1);
      return [[...counts.keys()], [...counts.values()]];
    };
    const [seqs, counts] = busy([]);
    const holds = { per_listener: req.perListener, hold_per_request: req.holdPerRequest ?? 1 };
    const claiming = { busy_seqs: seqs, busy_counts: counts, now, window: req.limit, ...holds, limit: req.limit, token, expires, want_next: req.wantsNextDue !== false };
    const rows = items.length === 0
      ? await run<DetailRow & { settled?: number[] }>(Q.CLAIM, Q.bind(Q.CLAIM_PARAMS, claiming))
      : await run<DetailRow & { settled?: number[] }>(Q.COMPLETE_AND_CLAIM, Q.bind(Q.COMPLETE_AND_CLAIM_PARAMS, { ...claiming, input: settleInput(items) }));
    const settled = settledOf(items, rows[0]?.settled ?? []);
    const claimed = leasedRows(rows, token, now);
    const nextDueAt = numOrNull(rows[0]?.next_due);
    // A full window that did not fill the claim held rows of capped listeners: ask each listener for its share.
    // When that found nothing (one capped listener with a backlog, the common case), asking again at every step
    // costs a statement each; the others wait at most FAIR_PAUSE_MS longer instead.
    if (claimed.length < req.limit && num(rows[0]?.seen) >= req.limit && now >= fairAfter) {
      const [more, moreCounts] = busy(claimed);
      const fair = await run<DetailRow>(Q.FAIR_CLAIM, Q.bind(Q.FAIR_CLAIM_PARAMS, {
        busy_seqs: more, busy_counts: moreCounts, now, room: req.limit - claimed.length, ...holds, token, expires,
      }));
      claimed.push(...leasedRows(fair, token, now));
      fairAfter = fair.some((r) => r.id !== null) ? 0 : now + FAIR_PAUSE_MS;
    }
    await reserveSlots(claimed, now);
    return { claimed, nextDueAt, settled };
  }

  return {
    async claimDue(req, now) {
      const { claimed, nextDueAt } = await claim(req, now);
      return { claimed, nextDueAt };
    },
    complete: (items, now) => settle(items, now),
    completeAndClaim: (items, req, now) => claim(req, now, items),
    async hold(leases, now) {
      if (leases.length === 0) return [];
      const rows = await run<{ id: string }>(Q.HOLD, [leases.map((l) => l.id), leases.map((l) => l.token), now]);
      const held = new Set(rows.map((r) => num(r.id)));
      return leases.map((l) => held.has(l.id));
    },
    async release(leases: Lease[], now) {
      return leases.length ? count(Q.RELEASE, [leases.map((l) => l.id), leases.map((l) => l.token), now]) : 0;
    },
    releaseOwner: (owner, now) => count(Q.RELEASE_OWNER, [`${owner}:`, now]),
    releaseAll: (now) => count(Q.RELEASE_ALL, [now]),
    rescueExpiredLeases: (now) => count(Q.RESCUE, [now]),
    async expireHeld(maxWaitMs, now) {
      const missed: MissedDelivery[] = [];
      type Row = { id: string; org_id: string; listener_id: string; queue_id: string; message_id: string };
      for (;;) {
        // With the message_missed events of the rows it changes, in one transaction.
        const rows = await retried(() => inTransaction(client, async (exec) => {
          const changed = await exec(Q.EXPIRE_HELD, [now - maxWaitMs, MISSED_WHILE_DOWN, now]) as Row[];
          await reportMissed(exec, changed.map((r) => num(r.id)), now);
          return changed;
        }));
        for (const r of rows) missed.push({ orgId: r.org_id, listenerId: r.listener_id, queueId: r.queue_id, messageId: r.message_id });
        if (rows.length < Q.EXPIRE_HELD_BATCH) return missed;
      }
    },
    deleteExpired: (before, limit) => count(Q.DELETE_EXPIRED, [idFloor("message", before), limit]),
    async replayChunk(limit, now) {
      try {
        return await replayChunk(client, limit, now);
      } catch (e) {
        throw storeError(e);
      }
    },
    async claimProbes(limit, holdMs, now) {
      type Row = { seq: string; id: string; queue_id: string; liveness_url: string; liveness_state: ProbeTarget["state"]; failures_in_row: number; headers: string | null };
      const rows = await run<Row>(Q.CLAIM_PROBES, [now, limit, now + holdMs]);
      return rows
        .map((r) => ({
          seq: num(r.seq), id: r.id, queueId: r.queue_id, livenessUrl: r.liveness_url, state: r.liveness_state, failuresInRow: r.failures_in_row,
          headers: r.headers === null ? null : JSON.parse(r.headers),
        }))
        .sort((a, b) => a.seq - b.seq);
    },
    async recordProbe(r, now) {
      const values = [r.seq, r.state, r.failuresInRow, r.ok ? 1 : 0, r.nextProbeAt, now];
      if (r.previous === r.state) return (await count(Q.RECORD_PROBE, values)) > 0;
      // A change of state, as the prober saw it: with its event, judged on the state the row holds.
      return retried(() => inTransaction(client, async (exec) => {
        const [before] = await exec("SELECT liveness_state FROM listeners WHERE seq = $1 FOR NO KEY UPDATE", [r.seq]);
        if (!before) return false;
        await exec(Q.RECORD_PROBE, values);
        if (before.liveness_state !== r.state) await reportStateChange(exec, r.seq, before.liveness_state, r.state, now);
        return true;
      }));
    },
    resume: (listenerSeq, limit, now) => count(Q.RESUME, [listenerSeq, limit, now]),
    // One row rewritten: it commits only while the server is reachable and can write (readiness, the outage probe).
    checkWritable: async (now) => void (await run(Q.CHECK_WRITABLE, [now])),
  };
}
