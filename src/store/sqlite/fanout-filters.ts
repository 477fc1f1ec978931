/**
 * Filters at the fan-out (docs/api.md, "Filters"). The delivery worker writes a slice of messages' deliveries in
 * one statement for listeners without a filter; a listener with one judges each message, and is given the pairs
 * its filter took. The judging reads and parses messages, so it runs before the write transaction, and is exact
 * there: a filter saved later applies only to messages published after it (their seqs are above every seq this
 * plan reads), and the filter a message was published under is the listener's own or, while messages published
 * under an earlier one wait, the oldest row of listener_filters that covers the message's seq.
 */
import { compileFilter, filterSubject, matches, type CompiledFilter } from "../../lib/filter.ts";
import { FANOUT_ROWS } from "../deliveries.ts";
import type { Statements } from "./delivery-statements.ts";
import type { Raw } from "./shared.ts";

/**
 * What one fan-out step writes, decided outside the write lock; `cursor` is checked again under it. `pairs` is
 * the JSON of the pairs the filters took, each one integer (encodePair), so that under the lock SQLite splits it
 * with a division where `[message, listener]` cost two JSON parses a pair; `k` is its factor.
 */
export type FanoutPlan = { cursor: number; upTo: number; top: number; filtered: number[]; pairs: string | null; k: number };

type FilteredListener = { seq: number; queueId: string; fromSeq: number; filter: string | null };
type HistoryRow = { listenerSeq: number; uptoSeq: number; filter: string | null };
type SliceMessage = { seq: number; name: string | null; data: string; onlyListener: number | null };
/** A filter as the fan-out uses it: null takes every message, REFUSED none. */
type Verdict = CompiledFilter | null | typeof REFUSED;
const REFUSED = Symbol("a stored filter that no longer compiles");
/** A listener's filters by message seq: `versions[i]` judges seqs up to `upto[i]`, `current` the later ones. */
type Judge = { seq: number; fromSeq: number; upto: number[]; versions: Verdict[]; current: Verdict };

/** Compiled filters by their saved text, so a step does not compile the same filter again. */
const MAX_CACHED = 10_000;

export class FanoutPlanner {
  private readonly compiled = new Map<string, Verdict>();

  /** The next slice past the cursor and, for filtered listeners, the pairs their filters took; null when none waits. */
  plan(s: Statements): FanoutPlan | null {
    const { cursor, top } = s.fanoutState.get() as { cursor: number; top: number };
    if (top <= cursor) return null;
    const { upTo } = s.fanoutUpTo.get({ cursor, top }) as { upTo: number };
    const listeners = s.filteredListeners.all() as FilteredListener[];
    if (listeners.length === 0) return { cursor, upTo, top, filtered: [], pairs: null, k: 1 };
    const filtered = listeners.map((l) => l.seq);
    const k = filtered.reduce((max, seq) => Math.max(max, seq), 0) + 1;
    // No further than every pair encodes exactly in a double.
    const span = Math.max(1, Math.floor(Number.MAX_SAFE_INTEGER / k) - 1);
    const { pairs, cut } = this.judge(s, listeners, cursor, Math.min(upTo, cursor + span));
    const encoded = pairs.length > 0 ? JSON.stringify(pairs.map((p) => encodePair(p, cursor, k))) : null;
    return { cursor, upTo: cut, top, filtered, pairs: encoded, k };
  }

  /**
   * The pairs the filters take, in message order, up to the message that brings them to FANOUT_ROWS (`cut`).
   * Each queue is read in seq order, and no further than the cut an earlier queue made.
   */
  private judge(s: Statements, listeners: FilteredListener[], cursor: number, upTo: number): { pairs: [number, number][]; cut: number } {
    const byQueue = this.judges(s, listeners, cursor);
    let pairs: [number, number][] = [];
    let cut = upTo;
    for (const [queue, judges] of byQueue) {
      const before = pairs.length;
      // One message at a time: a slice's data may be large, and only the pairs are kept.
      for (const m of s.sliceMessages.iterate({ queue, cursor, upTo: cut }) as IterableIterator<SliceMessage>) {
        judgeMessage(m, judges, pairs);
        if (pairs.length - before >= FANOUT_ROWS) {
          cut = m.seq;
          break;
        }
      }
    }
    if (byQueue.size > 1) {
      pairs = pairs.filter((p) => p[0] <= cut).sort((a, b) => a[0] - b[0]);
      if (pairs.length > FANOUT_ROWS) cut = pairs[FANOUT_ROWS - 1]![0];
      pairs = pairs.filter((p) => p[0] <= cut);
    }
    return { pairs, cut };
  }

  /** Each queue's filtered listeners, with the filter that judges each range of message seqs. */
  private judges(s: Statements, listeners: FilteredListener[], cursor: number): Map<string, Judge[]> {
    const history = s.filterHistory.all({ cursor }) as HistoryRow[];
    const byQueue = new Map<string, Judge[]>();
    for (const l of listeners) {
      const rows = history.filter((h) => h.listenerSeq === l.seq);
      const judge: Judge = {
        seq: l.seq, fromSeq: l.fromSeq, upto: rows.map((r) => r.uptoSeq), versions: rows.map((r) => this.compile(r.filter)), current: this.compile(l.filter),
      };
      const list = byQueue.get(l.queueId);
      if (list) list.push(judge);
      else byQueue.set(l.queueId, [judge]);
    }
    return byQueue;
  }

  /** A stored filter was checked when saved; one that no longer compiles (a rule tightened since) takes nothing. */
  private compile(text: string | null): Verdict {
    if (text === null) return null;
    const known = this.compiled.get(text);
    if (known !== undefined) return known;
    const result = compileFilter(JSON.parse(text));
    const filter = result.ok ? result.filter : REFUSED;
    if (this.compiled.size >= MAX_CACHED) this.compiled.clear();
    this.compiled.set(text, filter);
    return filter;
  }
}

/** Adds the pairs of one message: a message for one listener (a test message) goes to it whatever its filter,
 * and to no other; a listener created after the message's publish gets none. */
function judgeMessage(m: SliceMessage, judges: Judge[], pairs: [number, number][]): void {
  if (m.onlyListener !== null) {
    for (const j of judges) if (j.seq === m.onlyListener) pairs.push([m.seq, j.seq]);
    return;
  }
  const subject = filterSubject(m.name, m.data);
  for (const j of judges) {
    if (j.fromSeq >= m.seq) continue;
    const filter = filterAt(j, m.seq);
    if (filter === null || (filter !== REFUSED && matches(filter, subject))) pairs.push([m.seq, j.seq]);
  }
}

/** A pair as one integer, below 2^53 for a message within the plan's span past `cursor` (fanOutPairs splits it). */
const encodePair = ([message, listener]: [number, number], cursor: number, k: number) => (message - cursor) * k + listener;

function filterAt(j: Judge, seq: number): Verdict {
  for (let i = 0; i < j.upto.length; i++) if (seq <= j.upto[i]!) return j.versions[i]!;
  return j.current;
}

/**
 * Writes a planned slice inside the caller's write transaction and moves the cursor; true when messages remain
 * past it. A plan made before another writer moved the cursor is dropped (the next step plans again).
 */
export function applyFanout(s: Statements, plan: FanoutPlan): boolean {
  const { cursor } = s.fanoutState.get() as { cursor: number };
  if (cursor !== plan.cursor) return true;
  s.fanOut.run({ cursor: plan.cursor, upTo: plan.upTo, filtered: JSON.stringify(plan.filtered) });
  if (plan.pairs !== null) s.fanOutPairs.run({ pairs: plan.pairs, cursor, k: plan.k });
  if (plan.filtered.length > 0) s.pruneFilters.run({ upTo: plan.upTo });
  s.advanceFanout.run({ upTo: plan.upTo });
  return plan.upTo < plan.top;
}

/**
 * Whether one message not yet fanned out goes to one listener (GET of the message lists only those): the rule
 * the planner applies, for a single pair.
 */
export function takesMessage(raw: Raw, listener: { seq: number; filter: string | null }, message: { seq: number; name: string | null; data: string }): boolean {
  const earlier = raw.$client
    .query<{ filter: string | null }, [number, number]>("SELECT filter FROM listener_filters WHERE listener_seq = ? AND upto_seq >= ? ORDER BY upto_seq LIMIT 1")
    .get(listener.seq, message.seq);
  const text = earlier ? earlier.filter : listener.filter;
  if (text === null) return true;
  const compiled = compileFilter(JSON.parse(text));
  return compiled.ok && matches(compiled.filter, filterSubject(message.name, message.data));
}
