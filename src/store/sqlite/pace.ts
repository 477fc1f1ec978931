/**
 * Start slots of rate-limited listeners (docs/delivery.md, "Pace and order"). A claim that leases rows of such a
 * listener gives them consecutive slots 1000 / rate ms apart, from the listener's `rate_next_at` (or now, when
 * that has passed), and moves `rate_next_at` past them, in the lease's transaction; the worker starts no row
 * before its slot. Slots spread a burst evenly over the second instead of sending it at once.
 */
import { slotOf } from "../deliveries.ts";
import type { Statements } from "./delivery-statements.ts";

/** Per listener seq: the first slot of its rows in this claim, and its rate. */
export type Slots = Map<number, { from: number; rateLimit: number }>;

export function paceLeased(s: Statements, ids: number[], token: string, now: number): Slots {
  const slots: Slots = new Map();
  const rows = s.leasedPace.all({ ids: JSON.stringify(ids), token }) as { seq: number; n: number; rateLimit: number; nextAt: number }[];
  for (const r of rows) {
    const from = Math.max(now, r.nextAt);
    s.reserveSlots.run({ seq: r.seq, next: slotOf(from, r.n, r.rateLimit) });
    slots.set(r.seq, { from, rateLimit: r.rateLimit });
  }
  return slots;
}
