/**
 * Which due deliveries a claim takes (store/deliveries.ts claimDue), read outside any transaction so a claim
 * that finds nothing never asks for the write lock. Oldest due first, within each listener's hold (holdOf: its
 * concurrency, rate and order); a FIFO listener's only row that may go is its head, and only while none of its
 * line is in flight (delivery-statements.ts fifoHead, asked once a claim per FIFO listener). Rows of down or paused
 * listeners are taken uncapped: they are held in the database, not sent.
 *
 * Due rows are read a window at a time, oldest first, until the slots are filled; each full window the next one
 * doubles. A first window small beside the global cap keeps the common saturated case cheap: one listener at
 * its cap with a large backlog fills every window with rows it cannot take. Too small a window sends most steps
 * to the per-listener pass as well (docs/performance.md, Claim windows).
 */
import { holdOf, slotsLeft, type ClaimRequest, type Pace } from "../deliveries.ts";
import type { Statements } from "./delivery-statements.ts";

const FIRST_WINDOW = 64;
const MAX_WINDOW = 256;

type Stored = { concurrency: number | null; rateLimit: number | null; fifo: number; rateNextAt: number };
type Candidate = { id: number; listenerSeq: number; at: number; down: number } & Stored;
/** `heads`: each FIFO listener's row that may start now (null: none), as asked in this claim. */
type Selection = { ids: number[]; perListener: Map<number, number>; skipped: boolean; heads: Map<number, number | null>; rated: boolean };

/** The rows to lease, and whether any is a rate-limited listener's (its start slots then follow: pace.ts). */
export type Choice = { ids: number[]; rated: boolean };

const paceOf = (c: Stored): Pace => ({ concurrency: c.concurrency, rateLimit: c.rateLimit, fifo: c.fifo === 1 });

/** The rows of a listener a worker may hold after this claim: its hold, and for a rate-limited one the slots left. */
const limitOf = (c: { listenerSeq: number } & Stored, req: ClaimRequest, now: number) =>
  Math.min(holdOf(paceOf(c), req), (req.busy.get(c.listenerSeq) ?? 0) + slotsLeft(c.rateLimit, c.rateNextAt, now));

/** Whether a row may start as far as its order goes: any row of an unordered listener, a FIFO line's head alone. */
function inTurn(s: Statements, c: Omit<Candidate, "at">, into: Selection, now: number): boolean {
  if (c.fifo !== 1 || c.down) return true;
  let head = into.heads.get(c.listenerSeq);
  if (head === undefined) {
    head = (s.fifoHead.get({ now, seq: c.listenerSeq }) as { id: number } | null)?.id ?? null;
    into.heads.set(c.listenerSeq, head);
  }
  return head === c.id;
}

/** Oldest first, skipping rows whose listener holds all it may, or that may not go yet (a FIFO line). */
function select(s: Statements, candidates: Omit<Candidate, "at">[], req: ClaimRequest, into: Selection, now: number): void {
  const taken = new Set(into.ids);
  for (const c of candidates) {
    if (into.ids.length >= req.limit) return;
    if (taken.has(c.id)) continue;
    const count = into.perListener.get(c.listenerSeq) ?? req.busy.get(c.listenerSeq) ?? 0;
    if (!c.down && (count >= limitOf(c, req, now) || !inTurn(s, c, into, now))) {
      into.skipped = true;
      continue;
    }
    into.perListener.set(c.listenerSeq, count + 1);
    into.ids.push(c.id);
    if (c.rateLimit !== null && !c.down) into.rated = true;
    taken.add(c.id);
  }
}

export function chooseDue(s: Statements, req: ClaimRequest, now: number): Choice {
  const chosen: Selection = { ids: [], perListener: new Map(), skipped: false, heads: new Map(), rated: false };
  let from = { at: -1, id: 0 };
  for (let window = FIRST_WINDOW; ; window = Math.min(window * 2, MAX_WINDOW)) {
    const candidates = s.dueWindow.all({ now, at: from.at, id: from.id, window }) as Candidate[];
    select(s, candidates, req, chosen, now);
    if (candidates.length < window || chosen.ids.length >= req.limit) return lines(s, req, chosen, now);
    if (chosen.skipped) break;
    const last = candidates[candidates.length - 1]!;
    from = { at: last.at, id: last.id };
  }
  // A window held rows of capped listeners: look per listener, so one slow listener with a large backlog
  // cannot hold back the others. Each listener is asked only for what it can still take.
  for (const l of s.listenersWithDue.all({ now }) as ({ seq: number; down: number } & Stored)[]) {
    if (l.fifo === 1) continue; // its line: below
    const room = req.limit - chosen.ids.length;
    if (room <= 0) break;
    const have = chosen.perListener.get(l.seq) ?? req.busy.get(l.seq) ?? 0;
    const n = l.down ? room : Math.min(room, limitOf({ ...l, listenerSeq: l.seq }, req, now) - have);
    if (n <= 0) continue;
    // Rows this step already chose for the listener come back first and are skipped: `have` covers them
    // (it may also count rows in flight, which are not pending; the overshoot is at most the cap).
    const rows = s.dueOfListener.all({ now, seq: l.seq, n: n + have }) as { id: number }[];
    select(s, rows.map((r) => ({ ...l, id: r.id, listenerSeq: l.seq })), req, chosen, now);
  }
  return lines(s, req, chosen, now);
}

/** FIFO lines, which the window leaves out: each one's head, or a down or paused listener's rows to hold. */
function lines(s: Statements, req: ClaimRequest, chosen: Selection, now: number): Choice {
  for (const l of s.fifoDue.all({ now }) as ({ seq: number; down: number } & Stored)[]) {
    const room = req.limit - chosen.ids.length;
    if (room <= 0) break;
    const rows = (l.down ? s.dueOfListener.all({ now, seq: l.seq, n: room }) : s.fifoHead.all({ now, seq: l.seq })) as { id: number }[];
    // The head just read is the line's turn: inTurn need not ask again.
    if (!l.down && !chosen.heads.has(l.seq)) chosen.heads.set(l.seq, rows[0]?.id ?? null);
    select(s, rows.map((r) => ({ ...l, id: r.id, listenerSeq: l.seq })), req, chosen, now);
  }
  return { ids: chosen.ids, rated: chosen.rated };
}
