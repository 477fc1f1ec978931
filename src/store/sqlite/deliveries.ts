/**
 * DeliveryStore over bun:sqlite (states and fencing: store/deliveries.ts). This is the worker's hot path, so
 * it speaks prepared statements on the raw connection instead of building Drizzle queries per call, and each
 * call is one BEGIN IMMEDIATE transaction however many rows it settles.
 */
import type { Database } from "bun:sqlite";
import { idFloor, randomBase62 } from "../../lib/ids.ts";
import { replayStatements } from "./replays.ts";
import { slotOf, type ClaimedDelivery, type Completion, type DeliveryStore, type Lease, type MissedDelivery, type ProbeResult, type ProbeTarget } from "../deliveries.ts";
import { deliveryEvent, listenerEvent } from "./delivery-events.ts";
import type { Raw } from "./shared.ts";
import { prepareStatements, type Statements } from "./delivery-statements.ts";
import { applyFanout, FanoutPlanner, type FanoutPlan } from "./fanout-filters.ts";
import { whenUnlocked } from "./write-lock.ts";
import { chooseDue, type Choice } from "./claim-choice.ts";
import { paceLeased, type Slots } from "./pace.ts";
import { asStorageError, rollBackLeftover, writeReadiness } from "./writability.ts";
import type { LockSignal } from "./lock-signal.ts";

const MISSED_WHILE_DOWN = "listener down for longer than the retry schedule";
const NO_SLOTS: Slots = new Map();

type Detail = { id: number; attempt: number; listenerSeq: number; messageSeq: number; messageId: string; messageName: string | null; createdAt: number };
type ListenerDetail = {
  seq: number; id: string; orgId: string; notifyUrl: string; secret: string; previousSecret: string | null; previousSecretUntil: number | null;
  livenessState: string; enabled: number; queueId: string; queueName: string; headers: string | null;
  concurrency: number | null; rateLimit: number | null; fifo: number;
};

type Message = ClaimedDelivery["message"];
type Listener = ClaimedDelivery["listener"];

/**
 * One claim's objects, shared by its rows: a message's by its seq (send.ts builds the body once per message
 * object) and a listener's by its seq (send.ts writes its headers out once per listener object).
 */
type Shared = { data: Map<number, string>; messages: Map<number, Message>; listeners: Map<number, Listener> };

function claimedListener(l: ListenerDetail, now: number): Listener {
  const secrets = [l.secret];
  if (l.previousSecret && l.previousSecretUntil !== null && l.previousSecretUntil > now) secrets.push(l.previousSecret);
  return {
    seq: l.seq, id: l.id, orgId: l.orgId, notifyUrl: l.notifyUrl, secrets, held: l.livenessState === "down" || !l.enabled,
    headers: l.headers === null ? null : JSON.parse(l.headers),
    concurrency: l.concurrency, rateLimit: l.rateLimit, fifo: l.fifo === 1,
  };
}

function toClaimed(d: Detail, l: ListenerDetail, token: string, now: number, startAt: number | null, shared: Shared): ClaimedDelivery {
  const message = shared.messages.getOrInsertComputed(d.messageSeq, () =>
    ({ id: d.messageId, name: d.messageName, queue: { id: l.queueId, name: l.queueName }, data: shared.data.get(d.messageSeq)!, createdAt: d.createdAt }));
  const listener = shared.listeners.getOrInsertComputed(l.seq, () => claimedListener(l, now));
  return { id: d.id, token, attempt: d.attempt, listener, startAt, message };
}

function settle(s: Statements, c: Completion, now: number, acknowledged: Map<number, number>, raw: Raw): boolean {
  const next = c.next;
  if (next.state === "gone") return settleGone(s, c, now, raw);
  const r = c.record;
  const acked = next.state === "acknowledged";
  const changed = s.settle.run({
    id: c.id, token: c.token, now, state: next.state, attempt: c.attempt,
    nextAt: next.state === "pending" ? next.at : null, status: r.statusCode, error: r.error,
    ackedAt: acked ? r.attemptedAt : null, ackedMs: acked ? r.durationMs : null, ackedResponse: acked ? r.response : null,
  }).changes;
  if (changed === 0) return false;
  if (acked) acknowledged.set(c.listenerSeq, (acknowledged.get(c.listenerSeq) ?? 0) + 1);
  else s.insertAttempt.run({ id: c.id, attempt: c.attempt, at: r.attemptedAt, status: r.statusCode, duration: r.durationMs, error: r.error, response: r.response });
  if (next.state === "missed") {
    s.countMissed.run({ seq: c.listenerSeq, messageId: c.messageId });
    deliveryEvent(s, raw, c.id, "message_missed", now);
  }
  return true;
}

/** A 410 Gone: the attempt is recorded, the delivery held, and its listener paused (Standard Webhooks). */
function settleGone(s: Statements, c: Completion, now: number, raw: Raw): boolean {
  const r = c.record;
  const changed = s.settleGone.run({ id: c.id, token: c.token, now, attempt: c.attempt, status: r.statusCode, error: r.error }).changes;
  if (changed === 0) return false;
  s.insertAttempt.run({ id: c.id, attempt: c.attempt, at: r.attemptedAt, status: r.statusCode, duration: r.durationMs, error: r.error, response: r.response });
  if (s.pauseListener.run({ seq: c.listenerSeq }).changes > 0) deliveryEvent(s, raw, c.id, "listener_disabled", now, { status: r.statusCode });
  return true;
}

/** Settles every item; a listener's acknowledgements are counted with one UPDATE per batch, not one per delivery. */
function settleAll(s: Statements, items: Completion[], now: number, raw: Raw): boolean[] {
  const acknowledged = new Map<number, number>();
  const settled = items.map((c) => settle(s, c, now, acknowledged, raw));
  for (const [seq, n] of acknowledged) s.countAcknowledged.run({ seq, n });
  return settled;
}

type Held = { id: number; listenerSeq: number; messageId: string } & MissedDelivery;

/**
 * The rows leased under `token`, in the order they were chosen; each listener's fields are read once. A
 * rate-limited listener's rows take its slots in that order (pace.ts).
 */
function leasedDetails(s: Statements, ids: number[], token: string, now: number, slots: Slots): ClaimedDelivery[] {
  const rank = new Map(ids.map((id, i) => [id, i]));
  const rows = (s.leasedDetails.all({ ids: JSON.stringify(ids), token }) as Detail[]).sort((a, b) => rank.get(a.id)! - rank.get(b.id)!);
  if (rows.length === 0) return [];
  const seqs = [...new Set(rows.map((r) => r.listenerSeq))];
  const listeners = new Map((s.leasedListeners.all({ seqs: JSON.stringify(seqs) }) as ListenerDetail[]).map((l) => [l.seq, l]));
  const messageSeqs = JSON.stringify([...new Set(rows.map((r) => r.messageSeq))]);
  const data = new Map((s.leasedData.all({ seqs: messageSeqs }) as { seq: number; data: string }[]).map((m) => [m.seq, m.data]));
  const shared: Shared = { data, messages: new Map(), listeners: new Map() };
  const nth = new Map<number, number>();
  // A listener or message deleted since the lease took its deliveries with it; a row read before that is simply not sent.
  return rows.flatMap((d) => {
    const l = listeners.get(d.listenerSeq);
    if (!l || !data.has(d.messageSeq)) return [];
    const slot = slots.get(d.listenerSeq);
    const i = nth.get(d.listenerSeq) ?? 0;
    nth.set(d.listenerSeq, i + 1);
    return [toClaimed(d, l, token, now, slot ? slotOf(slot.from, i, slot.rateLimit) : null, shared)];
  });
}

/** The store's multi-statement units of work, each one BEGIN IMMEDIATE transaction. */
function transactions(sqlite: Database, s: Statements) {
  const raw: Raw = { $client: sqlite };
  const immediate = <A extends unknown[], T>(fn: (...args: A) => T) => {
    const tx = sqlite.transaction(fn);
    return (...args: A): T => tx.immediate(...args);
  };
  const replayChunk = replayStatements(sqlite);
  // Tokens must never repeat, even across store instances that share an owner name (tests, restarts).
  const nonce = randomBase62(6);
  let claims = 0;
  return {
    // Leases only; the caller reads the leased rows' details after the commit (completeAndClaim). `choose` is
    // the rows chosen before the transaction, or, when messages wait for their fan-out (`fanout`, planned
    // before it: fanout-filters.ts), the choice to make after it, so that their deliveries go out in this step.
    completeAndLease: immediate((items: Completion[], choose: Choice | (() => Choice), fanout: FanoutPlan | null, leaseMs: number, owner: string, now: number) => {
      const more = fanout !== null && applyFanout(s, fanout);
      const settled = settleAll(s, items, now, raw);
      const { ids, rated } = typeof choose === "function" ? choose() : choose;
      if (ids.length === 0) return { settled, token: null, ids, more, slots: NO_SLOTS };
      const token = `${owner}:${nonce}.${++claims}`;
      s.lease.run({ ids: JSON.stringify(ids), token, expires: now + leaseMs, now });
      return { settled, token, ids, more, slots: rated ? paceLeased(s, ids, token, now) : NO_SLOTS };
    }),
    complete: immediate((items: Completion[], now: number) => settleAll(s, items, now, raw)),
    replayChunk: immediate((limit: number, now: number) => replayChunk(limit, now)),
    hold: immediate((leases: Lease[], now: number) => leases.map((l) => s.hold.run({ id: l.id, token: l.token, now }).changes > 0)),
    release: immediate((leases: Lease[], now: number) =>
      leases.reduce((n, l) => n + s.release.run({ id: l.id, token: l.token, now }).changes, 0)),
    // A change of liveness state is a usage event (delivery-events.ts); most probes change nothing but counts.
    recordProbe: immediate((r: ProbeResult, now: number) => {
      const before = s.listenerRefs.get({ seq: r.seq }) as { state: string } | null;
      const values = { seq: r.seq, state: r.state, failures: r.failuresInRow, ok: r.ok ? 1 : 0, next: r.nextProbeAt, now };
      const changed = s.recordProbe.run(values).changes > 0;
      if (changed && before && before.state !== r.state) listenerEvent(s, raw, r.seq, "listener_state_changed", now, { from: before.state, to: r.state });
      return changed;
    }),
    expire: immediate((rows: Held[], now: number) => {
      const missed: MissedDelivery[] = [];
      for (const r of rows) {
        if (s.missHeld.run({ id: r.id, now, error: MISSED_WHILE_DOWN }).changes === 0) continue;
        s.countMissed.run({ seq: r.listenerSeq, messageId: r.messageId });
        deliveryEvent(s, raw, r.id, "message_missed", now);
        missed.push({ orgId: r.orgId, listenerId: r.listenerId, queueId: r.queueId, messageId: r.messageId });
      }
      return missed;
    }),
  };
}

/**
 * Every function's failure as the store reports it: a database that cannot be written as StorageUnavailable
 * (writability.ts), after ending any transaction the failure left open.
 */
function mapped(sqlite: Database, store: DeliveryStore): DeliveryStore {
  const out = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(store) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    out[name] = (...args: unknown[]) => fn(...args).catch((error: unknown) => {
      rollBackLeftover(sqlite);
      throw asStorageError(error);
    });
  }
  return out as unknown as DeliveryStore;
}

/**
 * Works on the raw connection: the main thread's store passes its own, the worker thread opens one. Every write
 * waits for the lock without blocking the thread (write-lock.ts): on the worker, sends and results go on. The
 * worker passes `signal`, and tells the API thread each time it gives the lock back (lock-signal.ts).
 */
export function deliveryStore(sqlite: Database, signal?: LockSignal): DeliveryStore {
  const s = prepareStatements(sqlite);
  const tx = transactions(sqlite, s);
  const planner = new FanoutPlanner();
  const write = <T>(fn: () => T) => whenUnlocked(sqlite, fn, signal);
  const completeAndClaim: DeliveryStore["completeAndClaim"] = async (items, req, now) => {
    // The rows being settled are `sending`, so none can be chosen here; a retry they schedule is a later step's.
    const fanout = planner.plan(s);
    // After the transaction's writes when they change what may be chosen: new deliveries, or a FIFO line's head settled.
    const late = fanout !== null || items.some((c) => c.fifo);
    const choose = late ? () => chooseDue(s, req, now) : chooseDue(s, req, now);
    const { settled, token, ids, more, slots } = items.length || typeof choose === "function" || choose.ids.length
      ? await write(() => tx.completeAndLease(items, choose, fanout, req.leaseMs, req.owner, now))
      : { settled: [], token: null, ids: [], more: false, slots: NO_SLOTS };
    // The details (URL, secrets, the message's data) are read after the commit, so the write lock the publishes
    // wait for is held only as long as the leasing takes. The lease token keeps the rows this worker's
    // meanwhile; a row deleted in between (its message, listener or queue) is simply not returned.
    const claimed = token ? leasedDetails(s, ids, token, now, slots) : [];
    // Another read after the commit; skipped when the caller will step again anyway. Messages left past the
    // fan-out slice are due now.
    if (more) return { settled, claimed, nextDueAt: now };
    // Rows claimed now will be in flight, and their ends start the next steps: as with `wantsNextDue` false.
    const next = req.wantsNextDue === false || claimed.length > 0 ? null : (s.nextDue.get({ now }) as { at: number | null } | null);
    return { settled, claimed, nextDueAt: next?.at ?? null };
  };
  return mapped(sqlite, {
    async claimDue(req, now) {
      const { claimed, nextDueAt } = await completeAndClaim([], req, now);
      return { claimed, nextDueAt };
    },
    async complete(items, now) {
      return items.length ? write(() => tx.complete(items, now)) : [];
    },
    completeAndClaim,
    async hold(leases, now) {
      return leases.length ? write(() => tx.hold(leases, now)) : [];
    },
    async release(leases, now) {
      return leases.length ? write(() => tx.release(leases, now)) : 0;
    },
    async releaseOwner(owner, now) {
      return write(() => s.releaseOwner.run({ prefix: `${owner}:`, now }).changes);
    },
    async deleteExpired(before, limit) {
      return write(() => s.deleteExpired.run({ before: idFloor("message", before), limit }).changes);
    },
    async replayChunk(limit, now) {
      return write(() => tx.replayChunk(limit, now));
    },
    async releaseAll(now) {
      return write(() => s.releaseAll.run({ now }).changes);
    },
    async rescueExpiredLeases(now) {
      return write(() => s.rescue.run({ now }).changes);
    },
    async expireHeld(maxWaitMs, now) {
      const rows = s.heldTooLong.all({ cutoff: now - maxWaitMs }) as Held[];
      return rows.length ? write(() => tx.expire(rows, now)) : [];
    },
    async claimProbes(limit, holdMs, now) {
      const rows = await write(() => s.claimProbes.all({ now, limit, hold: now + holdMs }) as (Omit<ProbeTarget, "headers"> & { headers: string | null })[]);
      return rows.map((r) => ({ ...r, headers: r.headers === null ? null : JSON.parse(r.headers) }));
    },
    async recordProbe(r, now) {
      return write(() => tx.recordProbe(r, now));
    },
    async resume(listenerSeq, limit, now) {
      return write(() => s.resume.run({ seq: listenerSeq, limit, now }).changes);
    },
    async checkWritable(now) {
      await write(() => writeReadiness(sqlite, now));
    },
  });
}
