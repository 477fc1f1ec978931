/**
 * Usage events of the last 24 hours, newest first. The API lists them oldest first after a (stored_at, id)
 * cursor, so the view starts from a short recent window and widens it until it has enough, then asks only for
 * what came after the newest one it holds.
 */
import { useRef, useState } from "preact/hooks";
import { enc, get } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { usePoll } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { Badge, type Tone } from "../parts/badges.tsx";
import { Cell, When } from "../parts/data.tsx";
import { Card, PageHeader } from "../parts/layout.tsx";
import { Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import { value } from "../parts/fields.tsx";

type Ref = { id: string; name: string | null } | null;
/** `from`/`to`: a liveness state change; `status`: the receiver's answer that disabled a listener. */
type UsageEvent = {
  id: string; type: string; stored_at: number; api_key: Ref; queue: Ref; listener: Ref; message: Ref;
  from?: string | null; to?: string | null; status?: number | null;
};
type Cursor = { at: number; id: string };

const SHOW = 200;
const LIMIT = 1000;
const PAGES = 2;
const WINDOWS = [5_000, 60_000, 600_000, 7_200_000, 86_400_000];
// Sorts after every id, so a cursor (t, AFTER_ALL) means "from t + 1 ms on".
const AFTER_ALL = "~";
const CATEGORIES: [string, string][] = [["all", "All events"], ["queues", "Queues"], ["listeners", "Listeners"], ["messages", "Messages"], ["api_keys", "API keys"]];

/** Events after the cursor, at most PAGES pages; `more` when there were more than that. */
async function after(cursor: Cursor, category: string): Promise<{ events: UsageEvent[]; more: boolean }> {
  const out: UsageEvent[] = [];
  for (let pages = 0; pages < PAGES; pages++) {
    const last = out.at(-1);
    const from = last ? { at: last.stored_at, id: last.id } : cursor;
    const { events } = await get<{ events: UsageEvent[] }>(`/v1/events?events=${category}&limit=${LIMIT}&startAfter=${from.at}&startAfterId=${enc(from.id)}`);
    out.push(...events);
    if (events.length < LIMIT) return { events: out, more: false };
  }
  return { events: out, more: true };
}

async function recent(category: string): Promise<UsageEvent[]> {
  let found: UsageEvent[] = [];
  for (const window of WINDOWS) {
    found = (await after({ at: Date.now() - window, id: AFTER_ALL }, category)).events;
    if (found.length >= SHOW) break;
  }
  return found;
}

/**
 * The newest events held so far, and the cursor after the newest. When events arrive faster than a few pages
 * per poll, following them would fall ever further behind, so the view starts again from the recent window.
 */
async function refresh(h: { events: UsageEvent[]; cursor: Cursor | null }, category: string): Promise<UsageEvent[]> {
  const next = h.cursor ? await after(h.cursor, category) : { events: await recent(category), more: false };
  const fresh = next.more ? await recent(category) : next.events;
  const last = fresh.at(-1);
  if (last) h.cursor = { at: last.stored_at, id: last.id };
  else h.cursor ??= { at: Date.now() - 1000, id: AFTER_ALL };
  h.events = [...fresh.reverse(), ...(next.more ? [] : h.events)].slice(0, SHOW);
  return h.events;
}

export function EventsView() {
  const [category, setCategory] = useState("all");
  const held = useRef<{ events: UsageEvent[]; cursor: Cursor | null }>({ events: [], cursor: null });
  const polled = usePoll(() => refresh(held.current, category), [category]);

  const choose = (next: string) => {
    held.current = { events: [], cursor: null };
    setCategory(next);
  };
  const events = polled.data;
  return (
    <>
      <PageHeader title="Usage events" sub="What happened in the organization in the last 24 hours, newest first: changes made through the API, and listeners' liveness and missed messages." />
      <ErrorBox error={polled.error} context="Could not read the events" />
      <Card
        title={events ? `${events.length >= SHOW ? `Newest ${SHOW}` : plural(events.length, "event")}` : "Events"}
        actions={
          <label class="inline-field">
            <span class="sr-only">Show</span>
            <select name="event-category" value={category} onChange={(e) => choose(value(e))}>
              {CATEGORIES.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
            </select>
          </label>
        }
      >
        {!events && !polled.error && <Loading what="events" />}
        {events && events.length === 0 && (
          <Empty title="No events in the last 24 hours.">Creating a queue, adding a listener or publishing a message records one.</Empty>
        )}
        {events && events.length > 0 && <EventsTable events={events} />}
      </Card>
    </>
  );
}

function EventsTable({ events }: { events: UsageEvent[] }) {
  return (
    <table class="table table-stack events">
      <thead><tr><th>When</th><th>Event</th><th>Queue</th><th>Listener</th><th>Message</th><th>API key</th></tr></thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <Cell label="When"><When ms={e.stored_at} /></Cell>
            <Cell label="Event"><Badge tone={tone(e)}>{e.type.replaceAll("_", " ")}</Badge><Change event={e} /></Cell>
            <Cell label="Queue">{e.queue && <RefLink to={e.type === "queue_deleted" ? null : `/queues/${e.queue.id}`} r={e.queue} />}</Cell>
            <Cell label="Listener">{e.listener?.name}</Cell>
            <Cell label="Message">{e.message && e.queue && <RefLink to={e.type === "message_deleted" ? null : `/queues/${e.queue.id}/messages/${e.message.id}`} r={e.message} />}</Cell>
            <Cell label="API key">{e.api_key?.name}</Cell>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What changed, for the events that carry it. */
function Change({ event: e }: { event: UsageEvent }) {
  const parts: string[] = [];
  if (e.from != null || e.to != null) parts.push(`${e.from ?? "?"} → ${e.to ?? "?"}`);
  if (e.status != null) parts.push(`answered ${e.status}`);
  if (parts.length === 0) return null;
  return <div class="event-change muted small">{parts.join(" · ")}</div>;
}

function tone({ type, to }: UsageEvent): Tone {
  if (type === "listener_state_changed") return to === "stable" ? "ok" : to === "down" ? "bad" : to === "unstable" ? "warn" : "info";
  if (type === "listener_disabled" || type === "message_missed") return "bad";
  if (type.endsWith("_deleted")) return "bad";
  if (type.endsWith("_added")) return "ok";
  if (type.endsWith("_redelivered") || type.endsWith("_replayed")) return "warn";
  return "info";
}

function RefLink({ to, r }: { to: string | null; r: { id: string; name: string | null } }) {
  const label = r.name ?? r.id;
  return to ? <Link to={to}>{label}</Link> : <span>{label}</span>;
}
