/**
 * A listener's pace and order on its card: the settings it has, the pace it is acknowledged at now, and for a FIFO
 * listener the head of its line, which holds every delivery behind it until it is final (docs/delivery.md).
 */
import type { ComponentChildren } from "preact";
import { clock, plural, relative } from "../lib/format.ts";
import { rate } from "../lib/pace.ts";
import { Link } from "../lib/router.ts";
import { DeliveryBadge } from "../parts/badges.tsx";
import type { Listener } from "./listener-card.tsx";

export type Ordering = "unordered" | "fifo";
export type LineHead = { message_id: string; state: "pending" | "sending"; attempts: number; next_attempt_at: number | null };
/** A FIFO listener's line, from GET of the one listener; `waiting` counts the head too while it is not in flight. */
export type Line = { head: LineHead | null; waiting: number };

/** "at most 20/s", "2 at a time": the limits a listener has of its own, none when it has none. */
export function limitsOf(l: Pick<Listener, "rate_limit" | "concurrency">): string[] {
  const parts: string[] = [];
  if (l.rate_limit != null) parts.push(`at most ${l.rate_limit.toLocaleString()}/s`);
  if (l.concurrency != null) parts.push(`${l.concurrency.toLocaleString()} at a time`);
  return parts;
}

/**
 * The Pace and Order rows of the card's property list: the limits it has, and its pace once two polls measured
 * it; nothing on a server without these settings.
 */
export function PaceRows({ listener: l, pace }: { listener: Listener; pace: number | null | undefined }) {
  if (l.ordering === undefined) return null;
  const limits = limitsOf(l);
  return (
    <>
      {(limits.length > 0 || pace != null) && (
        <>
          <dt>Pace</dt>
          <dd class="pace">
            {limits.length > 0 && <span class="pace-limits">{limits.join(" · ")}</span>}
            {pace != null && <span class="pace-now" title="Worked out from the acknowledged count between the last two refreshes.">≈ {rate(pace)}/s acknowledged</span>}
          </dd>
        </>
      )}
      {l.ordering === "fifo" && <><dt>Order</dt><dd class="order"><strong>FIFO</strong> <span class="muted">one at a time, in publish order</span></dd></>}
    </>
  );
}

type HeadProps = { queueId: string; listener: Listener; line: Line | undefined };

/** The delivery every other one of a FIFO listener waits for, and why it has not gone yet. */
export function HeadOfLine({ queueId, listener: l, line }: HeadProps) {
  if (l.ordering !== "fifo" || !line) return null;
  const head = line.head;
  if (!head) {
    return (
      <section class="line line-empty" aria-label="Head of the line">
        <span class="line-title">Head of the line</span> <span class="muted">none: every delivery so far is final</span>
      </section>
    );
  }
  const behind = Math.max(0, head.state === "pending" ? line.waiting - 1 : line.waiting);
  const stuck = head.attempts > 0 || head.next_attempt_at === null;
  return (
    <section class={`line ${stuck ? "line-stuck" : ""}`} aria-label="Head of the line">
      <div class="line-top">
        <span class="line-title">Head of the line</span>
        <span class="line-behind">{behind === 0 ? "nothing waits behind it" : `${plural(behind, "delivery", "deliveries")} ${behind === 1 ? "waits" : "wait"} behind it`}</span>
      </div>
      <div class="line-head">
        <Link to={`/queues/${queueId}/messages/${head.message_id}`}><code>{head.message_id}</code></Link>
        <span class="line-state"><DeliveryBadge state={head.state} /> <span class="line-attempts">{plural(head.attempts, "attempt")}</span></span>
      </div>
      <p class="line-when">{whyWaiting(l, head)}</p>
    </section>
  );
}

function whyWaiting(l: Listener, head: LineHead, now = Date.now()): ComponentChildren {
  if (head.state === "sending") return `Attempt ${head.attempts + 1} is in flight.`;
  if (head.next_attempt_at === null) {
    const why = l.enabled === false ? "paused" : l.liveness.state === "down" ? "down" : "down or paused";
    return `Held while the listener is ${why}; it goes first once the listener is back.`;
  }
  const at = head.next_attempt_at;
  if (at <= now) return head.attempts > 0 ? "Its retry is due now." : "Due now: it is the next to be sent.";
  const when = <>{clock(at, now)} (<span class="nowrap">{relative(at, now)}</span>)</>;
  return head.attempts > 0 ? <>Waiting for its retry at {when}.</> : <>Due at {when}.</>;
}
