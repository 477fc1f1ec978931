/**
 * The delivery worker's view of storage: claiming due deliveries under a lease, the guarded transitions that
 * settle them, and the liveness bookkeeping of listeners. Unscoped by organization: the worker serves all.
 *
 * Delivery states and transitions (every transition is one named function that reports what it changed):
 *
 *   (published) --claimDue, fan-out--> pending: one per listener the publish saw, due at the publish
 *   pending --claimDue--> sending --complete--> acknowledged | pending (retry at t) | missed
 *                         sending --hold------> pending, waiting for its listener (next_attempt_at NULL)
 *                         sending --release---> pending, due now (shutdown: the send never finished)
 *   sending, lease expired --rescueExpiredLeases--> pending, due now (its worker died)
 *   sending, at a server's start --releaseAll--> pending, due now (the process that held it died)
 *                         sending --complete, gone (410)--> pending, held; the listener is paused
 *   pending, waiting --resume (after a successful probe)--> pending, due now
 *   pending, waiting longer than maxWaitMs --expireHeld--> missed
 *   acknowledged | missed | pending --redeliver, replayChunk--> pending, due now, next cycle (attempt 0)
 *   (any final, old) --deleteExpired--> gone with its message (retention)
 *
 * Fencing: a claim writes a fresh token into lease_owner, and every transition out of `sending` requires
 * `state = 'sending' AND lease_owner = token`. A worker whose lease expired (and whose row was claimed again)
 * or whose row was deleted meanwhile changes nothing. `attempt` counts attempts made: a claim does not raise
 * it, a completion does, so a send lost in a crash is repeated under the same number.
 *
 * Listener counters (acknowledged_count, missed_count, missed) change in the same transaction as the
 * delivery transition that causes them, so they are exact.
 */
import type { LivenessState } from "./index.ts";

export type Lease = { id: number; token: string };

/**
 * A publish writes its message only; a claim first writes the deliveries of the messages published since the last
 * one, a slice at a time: at most this many messages, and no message past the one that brings the slice's
 * deliveries to FANOUT_ROWS, counted apart for listeners without a filter and for those a filter judges (so the
 * slice holds at most twice that many plus two messages'). A backlog left by a
 * stopped worker, or a burst to a queue with many listeners, then never holds the write lock for long; the claim
 * reports `nextDueAt` now while messages remain.
 */
export const FANOUT_CHUNK = 2_000;
export const FANOUT_ROWS = 4_000;

/** A delivery leased to the caller, with everything needed to send it. */
export interface ClaimedDelivery extends Lease {
  /** Attempts made before this one. */
  attempt: number;
  listener: {
    seq: number;
    id: string;
    orgId: string;
    notifyUrl: string;
    /** The current secret, then the previous one while its grace period lasts. */
    secrets: string[];
    /** Deliveries to a down or paused listener are held (`hold`), not sent. */
    held: boolean;
    /** The listener's own headers, sent with each delivery; null: none. */
    headers: Record<string, string> | null;
  } & Pace;
  /**
   * The earliest time this delivery may start, the slot its rate-limited listener gave it (spaced 1000 / rate
   * ms after the listener's previous one, across every worker); null when the listener has no rate limit.
   */
  startAt: number | null;
  message: {
    id: string;
    name: string | null;
    queue: { id: string; name: string };
    /** The stored JSON text of `data`, spliced into the payload as is. */
    data: string;
    createdAt: number;
  };
}

/** What decides when a listener's deliveries may start (docs/delivery.md, "Pace and order"). */
export type Pace = {
  /** Requests in flight at most; null: the worker's default. */
  concurrency: number | null;
  /** Starts per second at most; null: none beyond concurrency. */
  rateLimit: number | null;
  /** One at a time in message order, the next once the one before is final. */
  fifo: boolean;
};

/** A rate-limited listener's rows held by a worker cover at most this much time of its starts. */
export const RATE_HOLD_MS = 2_000;

/**
 * How many rows of a listener a worker may hold, in flight and waiting, which the claim never exceeds: a FIFO
 * listener one; else `holdPerRequest` for each request it may have in flight (the request's `perListener` for
 * a listener without a concurrency of its own), and a rate-limited one no more than RATE_HOLD_MS of its starts.
 * store/postgres/delivery-sql.ts says the same in SQL (HOLD_SQL); delivery-sql.test.ts holds the two together.
 */
export function holdOf(p: Pace, req: Pick<ClaimRequest, "perListener" | "holdPerRequest">): number {
  if (p.fifo) return 1;
  const byRequests = p.concurrency === null ? req.perListener : p.concurrency * (req.holdPerRequest ?? 1);
  return p.rateLimit === null ? byRequests : Math.min(byRequests, Math.max(1, Math.ceil((p.rateLimit * RATE_HOLD_MS) / 1000)));
}

/**
 * How many more rows of a rate-limited listener a claim at `now` may take: those whose start slots, counted from
 * `nextAt` (its rate_next_at), fall within RATE_HOLD_MS of now. So however many workers claim, the slots given
 * out stay within that time, and a row never waits for its slot longer than its lease allows.
 */
export function slotsLeft(rateLimit: number | null, nextAt: number, now: number): number {
  if (rateLimit === null) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor(((now + RATE_HOLD_MS - Math.max(now, nextAt)) * rateLimit) / 1000));
}

/** The start slot of the `i`th row (from 0) a claim leased to a rate-limited listener whose slots begin at `from`. */
export const slotOf = (from: number, i: number, rateLimit: number) => from + Math.ceil((i * 1000) / rateLimit);

export type ClaimRequest = {
  /** Prefix of the lease tokens; one per worker instance, so `releaseOwner` can free a dead worker's rows. */
  owner: string;
  leaseMs: number;
  limit: number;
  /**
   * Rows held per listener, counting `busy`, for a listener without settings of its own (holdOf says the rest).
   * Rows of down or paused listeners are not capped: they are held in the database, not sent.
   */
  perListener: number;
  /** Rows held per request a listener with its own concurrency may have in flight (default 1). */
  holdPerRequest?: number;
  /** Deliveries the caller has in flight now, by listener seq. */
  busy: ReadonlyMap<number, number>;
  /**
   * False when the caller steps again anyway (it has requests in flight, whose ends start a step): the store may
   * then skip looking for the next due time and report `nextDueAt: null`. Unset means true.
   */
  wantsNextDue?: boolean;
};

/** `nextDueAt`: the earliest future next_attempt_at of a pending row, so the caller can sleep until then. */
export type Claim = { claimed: ClaimedDelivery[]; nextDueAt: number | null };

export type AttemptRecord = {
  attemptedAt: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The start of the response body, already cut short. */
  response: string | null;
};

/** `gone`: the receiver answered 410; the delivery is held and its listener paused (Standard Webhooks). */
export type Settlement = { state: "acknowledged" } | { state: "pending"; at: number } | { state: "missed" } | { state: "gone" };

export interface Completion extends Lease {
  listenerSeq: number;
  listenerId: string;
  messageId: string;
  /** The attempt's number (1 for the first). */
  attempt: number;
  record: AttemptRecord;
  next: Settlement;
  /**
   * The delivery is in a FIFO line: settling it may let the next of its line go, so a claim in the same step
   * must look after the settlement, not before.
   */
  fifo?: boolean;
}

export type ProbeTarget = {
  seq: number;
  id: string;
  queueId: string;
  livenessUrl: string;
  state: LivenessState;
  failuresInRow: number;
  /** The listener's own headers, sent with each probe too; null: none. */
  headers: Record<string, string> | null;
};

/** A delivery that became missed, for the worker's log line and count. */
export type MissedDelivery = { orgId: string; listenerId: string; queueId: string; messageId: string };

export type ProbeResult = {
  seq: number;
  /** The state the prober found when it claimed the probe: a store may skip looking for a change when it is the same. */
  previous?: LivenessState;
  ok: boolean;
  state: LivenessState;
  failuresInRow: number;
  /** When the next probe is due. */
  nextProbeAt: number;
};

export interface DeliveryStore {
  /**
   * Writes the deliveries of new messages (FANOUT_CHUNK), then leases due deliveries, oldest first, within the
   * caps; rows of other listeners are not starved by a capped one.
   */
  claimDue(request: ClaimRequest, now: number): Promise<Claim>;
  /** Records each attempt and settles its delivery; per item, whether the guarded transition changed a row. */
  complete(items: Completion[], now: number): Promise<boolean[]>;
  /**
   * `complete`, then `claimDue`, in one transaction: a worker step settles what came back and fills the slots
   * that freed with one commit instead of two, so half the lock takes and WAL pages per step.
   */
  completeAndClaim(items: Completion[], request: ClaimRequest, now: number): Promise<Claim & { settled: boolean[] }>;
  /** Puts leased deliveries of a down listener aside without using up an attempt; per item, whether it changed. */
  hold(leases: Lease[], now: number): Promise<boolean[]>;
  /** Gives leased, unsent deliveries back, due now (graceful stop); returns how many changed. */
  release(leases: Lease[], now: number): Promise<number>;
  /** Gives back every lease taken under `owner` (a worker known to be dead); returns how many. */
  releaseOwner(owner: string, now: number): Promise<number>;
  /**
   * Every lease back to pending, due now; returns how many. Only for a process that knows no other one delivers
   * from this database (SQLite's server lock: store/sqlite/server-lock.ts), so every lease it finds is dead.
   */
  releaseAll(now: number): Promise<number>;
  /** Expired leases back to pending, due now; returns how many. */
  rescueExpiredLeases(now: number): Promise<number>;
  /** Held deliveries waiting longer than `maxWaitMs` become missed; returns those that did. */
  expireHeld(maxWaitMs: number, now: number): Promise<MissedDelivery[]>;
  /**
   * Retention: deletes up to `limit` messages created before `before` whose deliveries are all final (none
   * pending or sending; a message without any is final once fanned out), with their deliveries and attempts,
   * oldest first; returns how many.
   */
  deleteExpired(before: number, limit: number): Promise<number>;
  /**
   * Works on the oldest waiting replay (ListenerStore.replay): its next `limit` deliveries are looked at, and the
   * final ones start a new cycle, due now. `more` is false when no replay waits.
   */
  replayChunk(limit: number, now: number): Promise<{ replayed: number; more: boolean }>;
  /**
   * Listeners whose probe is due, at most `limit`. Their next probe is pushed to `now + holdMs` so a probe in
   * flight is not started twice; `recordProbe` sets the real time.
   */
  claimProbes(limit: number, holdMs: number, now: number): Promise<ProbeTarget[]>;
  /** Stores a probe's outcome (state computed by the caller); false when the listener no longer exists. */
  recordProbe(result: ProbeResult, now: number): Promise<boolean>;
  /**
   * Makes up to `limit` of the listener's held deliveries due now; returns how many. The caller repeats it
   * after a successful probe until fewer than `limit` come back: one transaction per chunk, so a large
   * backlog never holds the write lock for long.
   */
  resume(listenerSeq: number, limit: number, now: number): Promise<number>;
  /**
   * One tiny real write: settles when the database accepts writes, else throws StorageUnavailable (as every
   * function here does when the database cannot be written). The worker's outage probe (store/outage.ts).
   */
  checkWritable(now: number): Promise<void>;
}
