/**
 * A listener's recent deliveries (GET …/listeners/{l}/deliveries, newest first), each opening to its attempts
 * with their status, time and the start of the receiver's answer, and a redeliver button when the session may
 * manage. A customer sees here what was sent to them and how their endpoint answered.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { call, enc } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { DeliveryBadge, HttpStatus } from "../parts/badges.tsx";
import { When } from "../parts/data.tsx";
import { Done, ErrorBox, Loading } from "../parts/notices.tsx";
import type { Queue } from "../views/queue.tsx";
import type { PortalListener } from "./panels.tsx";

type Delivery = {
  message: { id: string; name: string | null; created_at: number };
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  cycle: number;
  updated_at: number;
};
type Attempt = {
  listener: { id: string }; attempt: number; cycle: number; attempted_at: number; status_code: number | null;
  duration_ms: number; error: string | null; response: string | null;
};

const SHOWN = 10;
const EVERY_MS = 5000;

type ListProps = { queue: Queue; listener: PortalListener; manage: boolean; refresh: number; onListenerChange: () => void };

/** `onListenerChange`: a delivery moved on, so the listener's counts above the list are stale too. */
export function RecentDeliveries({ queue, listener: l, manage, refresh, onListenerChange }: ListProps) {
  const path = `/v1/queues/${enc(queue.id)}/listeners/${enc(l.id)}/deliveries?per_page=${SHOWN}`;
  const list = usePoll(async () => {
    const reply = await call<{ deliveries: Delivery[] }>("GET", path);
    return { items: reply.body.deliveries, total: reply.total ?? reply.body.deliveries.length };
  }, [path, refresh], EVERY_MS);
  const data = list.data;
  // A delivery that moved on (a new one, a state, an attempt) moved the listener's counts too: they reload with it.
  const progress = data?.items.map((d) => `${d.message.id}:${d.cycle}:${d.state}:${d.attempts}`).join() ?? null;
  const seen = useRef<string | null>(null);
  useEffect(() => {
    if (progress === null) return;
    if (seen.current !== null && seen.current !== progress) onListenerChange();
    seen.current = progress;
  }, [progress]);
  return (
    <section class="portal-section" aria-label={`Recent deliveries to ${l.name}`}>
      <h4 class="portal-section-title">Recent deliveries{data && data.total > SHOWN ? ` (newest ${SHOWN} of ${data.total})` : ""}</h4>
      <ErrorBox error={list.error} context="Could not load the deliveries" />
      {!data && !list.error && <Loading what="the deliveries" />}
      {data && data.items.length === 0 && <p class="muted small">Nothing sent yet. A message published from now on, or a test message, shows here.</p>}
      {data && data.items.length > 0 && (
        <ul class="deliveries">
          {/* Keyed by message alone: a new cycle (Send again, a replay) keeps an opened delivery open. */}
          {data.items.map((d) => <DeliveryItem key={d.message.id} queue={queue} listenerId={l.id} delivery={d} manage={manage} onChange={list.refresh} />)}
        </ul>
      )}
    </section>
  );
}

type ItemProps = { queue: Queue; listenerId: string; delivery: Delivery; manage: boolean; onChange: () => void };

function DeliveryItem({ queue, listenerId, delivery: d, manage, onChange }: ItemProps) {
  const [open, setOpen] = useState(false);
  return (
    <li class="delivery" data-message={d.message.id}>
      <button type="button" class="delivery-summary" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class="delivery-name">{d.message.name ?? d.message.id}</span>
        <span class="delivery-status"><HttpStatus code={d.last_status} /></span>
        <span class="delivery-meta small">
          <DeliveryBadge state={d.state} />
          <span class="muted"><When ms={d.message.created_at} /> · {plural(d.attempts, "attempt")}</span>
        </span>
      </button>
      {open && <Attempts queue={queue} listenerId={listenerId} delivery={d} manage={manage} onChange={onChange} />}
    </li>
  );
}

function Attempts({ queue, listenerId, delivery: d, manage, onChange }: ItemProps) {
  const path = `/v1/queues/${enc(queue.id)}/messages/${enc(d.message.id)}`;
  const attempts = usePoll(async () => {
    const body = (await call<{ attempts: Attempt[] }>("GET", `${path}/attempts`)).body;
    return body.attempts.filter((a) => a.listener.id === listenerId);
  }, [path, d.attempts, d.cycle], EVERY_MS);
  // Attempts newer than the summary above them (the list polls on its own clock): the list catches up now, so
  // an item does not read "Sending · 0 attempts" over the 200 it shows.
  const made = attempts.data?.filter((a) => a.cycle === d.cycle).length ?? 0;
  useEffect(() => {
    if (made > d.attempts) onChange();
  }, [made, d.attempts]);
  const redeliver = useAction();
  const again = () =>
    void redeliver.run(async () => {
      await call("POST", `${path}/redeliver`, { body: { listeners: [listenerId] } });
      onChange();
      return "Sent again: a new cycle of attempts has started.";
    });
  return (
    <div class="delivery-detail">
      {d.last_error && <p class="error-text small">{d.last_error}</p>}
      <ErrorBox error={attempts.error} context="Could not load the attempts" />
      {attempts.data?.length === 0 && <p class="muted small">No attempt yet.</p>}
      {attempts.data && attempts.data.length > 0 && (
        <ol class="attempts-list">
          {attempts.data.map((a) => (
            <li key={`${a.cycle}-${a.attempt}`} class="attempt">
              <div class="attempt-line">
                <HttpStatus code={a.status_code} />
                <span class="small">#{a.attempt}{a.cycle > 1 ? ` · cycle ${a.cycle}` : ""}</span>
                <span class="muted small"><When ms={a.attempted_at} /> · {a.duration_ms} ms</span>
              </div>
              {a.error && <p class="error-text small">{a.error}</p>}
              {a.response && <pre class="attempt-response" title="The start of your endpoint's answer">{a.response}</pre>}
            </li>
          ))}
        </ol>
      )}
      <ErrorBox error={redeliver.error} context="Not sent again" />
      <Done>{redeliver.done}</Done>
      {manage && <button type="button" class="btn btn-small" disabled={redeliver.busy} onClick={again}>Send again</button>}
    </div>
  );
}
