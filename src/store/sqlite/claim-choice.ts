/**
 * Which due deliveries a claim takes (store/deliveries.ts claimDue), read outside any transaction so a claim
 * that finds nothing never asks for the write lock. Oldest due first, within each listener's hold (holdOf: its
 * concurrency, rate and order); a FIFO listener's only row that may go is its head, and only while none of its
 * line is in flight (delivery-statements.ts TAKEABLE). Rows of down or paused listeners are taken uncapped: they
 * are held in the database, not sent.
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
type Candidate = { id: number; listenerSeq: number; at: number; down: number; takeable: number } & Stored;
type Selection = { ids: number[]; perListener: Map<number, number>; skipped: boolean };

const paceOf = (c: Stored): Pace => ({ concurrency: c.concurrency, rateLimit: c.rateLimit, fifo: c.fifo === 1 });

/** The rows of a listener a worker may hold after this claim: its hold, and for a rate-limited one the slots left. */
const limitOf = (c: { listenerSeq: number } & Stored, req: ClaimRequest, now: number) =>
  Math.min(holdOf(paceOf(c), req), (req.busy.get(c.listenerSeq) ?? 0) + slotsLeft(c.rateLimit, c.rateNextAt, now));

/** Oldest first, skipping rows whose listener holds all it may, or that may not go yet (a FIFO line). */
function select(candidates: Omit<Candidate, "at">[], req: ClaimRequest, into: Selection, now: number): void {
  const taken = new Set(into.ids);
  for (const c of candidates) {
    if (into.ids.length >= req.limit) return;
    if (taken.has(c.id)) continue;
    const count = into.perListener.get(c.listenerSeq) ?? req.busy.get(c.listenerSeq) ?? 0;
    if (!c.down && (!c.takeable || count >= limitOf(c, req, now))) {
      into.skipped = true;
      continue;
    }
    into.perListener.set(c.listenerSeq, count + 1);
    into.ids.push(c.id);
    taken.add(c.id);
  }
}

export function chooseDue(s: Statements, req: ClaimRequest, now: number): number[] {
  const chosen: Selection = { ids: [], perListener: new Map(), skipped: false };
  let from = { at: -1, id: 0 };
  for (let window = FIRST_WINDOW; ; window = Math.min(window * 2, MAX_WINDOW)) {
    const candidates = s.dueWindow.all({ now, at: from.at, id: from.id, window }) as Candidate[];
    select(candidates, req, chosen, now);
    if (candidates.length < window || chosen.ids.length >= req.limit) return chosen.ids;
    if (chosen.skipped) break;
    const last = candidates[candidates.length - 1]!;
    from = { at: last.at, id: last.id };
  }
  // A window held rows of capped listeners: look per listener, so one slow listener with a large backlog
  // cannot hold back the others. Each listener is asked only for what it can still take.
  for (const l of s.listenersWithDue.all({ now }) as ({ seq: number; down: number } & Stored)[]) {
    const room = req.limit - chosen.ids.length;
    if (room <= 0) break;
    const have = chosen.perListener.get(l.seq) ?? req.busy.get(l.seq) ?? 0;
    const n = l.down ? room : Math.min(room, limitOf({ ...l, listenerSeq: l.seq }, req, now) - have);
    if (n <= 0) continue;
    const line = l.fifo === 1 && !l.down;
    // Rows this step already chose for the listener come back first and are skipped: `have` covers them
    // (it may also count rows in flight, which are not pending; the overshoot is at most the cap).
    const rows = (line ? s.fifoHead.all({ now, seq: l.seq }) : s.dueOfListener.all({ now, seq: l.seq, n: n + have })) as { id: number }[];
    select(rows.map((r) => ({ ...l, id: r.id, listenerSeq: l.seq, takeable: 1 })), req, chosen, now);
  }
  return chosen.ids;
}
