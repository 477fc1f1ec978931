/**
 * One listener: liveness, pause state, what it receives and its headers, its pace and order (with the head of a
 * FIFO listener's line), counters and missed messages, with pause/resume, settings, replay and delete.
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { call, enc } from "../lib/api.ts";
import { count, plural } from "../lib/format.ts";
import { useAction } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { LivenessBadge, PausedBadge } from "../parts/badges.tsx";
import { Done, ErrorBox } from "../parts/notices.tsx";
import { Id } from "../parts/layout.tsx";
import type { Filter } from "../lib/filters.ts";
import { ReplayForm } from "./replay-form.tsx";
import { ListenerSettings } from "./listener-settings.tsx";
import type { Headers } from "./headers-form.tsx";
import { HeadOfLine, PaceRows, type Line, type Ordering } from "./listener-pace.tsx";
import type { Queue } from "./queue.tsx";

export type Listener = {
  id: string;
  name: string;
  notify_url: string;
  liveness_url: string;
  /** Absent on a server without pausing (an older version). */
  enabled?: boolean;
  liveness: { state: string; success_count: number; failure_count: number };
  messages: { acknowledged_count: number; missed: string[]; missed_count: number };
  /** Absent on a server without filters and headers (an older version); null: none. */
  filter?: Filter | null;
  headers?: Headers | null;
  /** Absent on a server without pace and order (an older version); null: none of its own. */
  rate_limit?: number | null;
  concurrency?: number | null;
  ordering?: Ordering;
};

type CardProps = { queue: Queue; listener: Listener; onChange: () => void };
/** `manage` false hides the actions (a view-only portal); `children` go below them (the portal's panels). */
type CardOptions = { manage?: boolean; children?: ComponentChildren };
/** `pace`: acknowledged per second between the last two polls (null until measured); `line`: a FIFO listener's. */
type Measured = { pace?: number | null; line?: Line };

export function ListenerCard(props: CardProps & CardOptions & Measured) {
  const { queue, listener: l, onChange, manage = true, children, pace, line } = props;
  const paused = l.enabled === false;
  return (
    <article class={`card listener ${paused ? "listener-paused" : ""}`} data-listener={l.name}>
      <div class="listener-head">
        <h3>{l.name}</h3>
        <div class="badges">
          <LivenessBadge state={l.liveness.state} />
          {paused && <PausedBadge />}
        </div>
      </div>
      {paused && (
        <p class="paused-note">
          Deliveries are held while paused, spending no retries; resuming sends them. A message held longer than the
          whole retry schedule counts as missed.
        </p>
      )}
      <dl class="props">
        <dt>Notify</dt><dd class="url">{l.notify_url}</dd>
        <dt>Liveness</dt><dd class="url">{l.liveness_url}</dd>
        <dt>ID</dt><dd><Id value={l.id} /></dd>
        {l.filter !== undefined && <><dt>Receives</dt><dd><FilterSummary filter={l.filter} /></dd></>}
        {l.headers && <><dt>Headers</dt><dd><HeaderNames headers={l.headers} /></dd></>}
        <PaceRows listener={l} pace={pace} />
      </dl>
      <HeadOfLine queueId={queue.id} listener={l} line={line} />
      <Stats listener={l} />
      <Missed queue={queue} listener={l} />
      {manage && <Actions queue={queue} listener={l} onChange={onChange} />}
      {children}
    </article>
  );
}

function FilterSummary({ filter }: { filter: Filter | null }) {
  if (!filter || (!filter.names && filter.data === undefined)) return <span class="muted">every message</span>;
  return (
    <div class="filter-summary">
      {filter.names && <div>named {filter.names.map((n, i) => <span key={i}>{i > 0 && <span class="muted"> or </span>}<code>{n}</code></span>)}</div>}
      {filter.data !== undefined && <div>{filter.names && <span class="muted">and </span>}data matching <code>{JSON.stringify(filter.data)}</code></div>}
    </div>
  );
}

/** Names only: values may be credentials and are never shown again (a read-only key gets "[hidden]" anyway). */
function HeaderNames({ headers }: { headers: Headers }) {
  return (
    <ul class="header-names">
      {Object.keys(headers).map((name) => <li key={name}><code>{name}</code> <span class="muted small">value hidden</span></li>)}
    </ul>
  );
}

function Stats({ listener: l }: { listener: Listener }) {
  return (
    <div class="stats">
      <div class="stat"><span class="stat-value">{count(l.messages.acknowledged_count)}</span><span class="stat-label">acknowledged</span></div>
      <div class={`stat ${l.messages.missed_count > 0 ? "stat-bad" : ""}`}><span class="stat-value">{count(l.messages.missed_count)}</span><span class="stat-label">missed</span></div>
      <div class="stat">
        <span class="stat-value">{count(l.liveness.success_count)}<span class="muted"> / </span>{count(l.liveness.failure_count)}</span>
        <span class="stat-label">probes ok / failed</span>
      </div>
    </div>
  );
}

function Missed({ queue, listener: l }: { queue: Queue; listener: Listener }) {
  if (l.messages.missed.length === 0) return null;
  const newest = l.messages.missed_count > l.messages.missed.length ? ` (newest ${l.messages.missed.length})` : "";
  return (
    <details class="disclosure">
      <summary>{plural(l.messages.missed_count, "missed message")}{newest}</summary>
      <ul class="id-list">
        {l.messages.missed.map((id) => <li key={id}><Link to={`/queues/${queue.id}/messages/${id}`}><code>{id}</code></Link></li>)}
      </ul>
    </details>
  );
}

/** Pausing is `PUT {enabled}` (docs/delivery.md); its buttons show only when the server reports `enabled`. */
function Actions({ queue, listener: l, onChange }: CardProps) {
  const action = useAction();
  const [open, setOpen] = useState<"settings" | "replay" | null>(null);
  const toggle = (panel: "settings" | "replay") => setOpen(open === panel ? null : panel);
  const path = `/v1/queues/${enc(queue.id)}/listeners/${enc(l.id)}`;
  const setEnabled = (enabled: boolean) =>
    void action.run(async () => {
      await call("PUT", path, { body: { enabled } });
      onChange();
      return enabled ? `Resumed: held deliveries to ${l.name} are sent now.` : `Paused: deliveries to ${l.name} are held until it is resumed.`;
    });
  const remove = () => {
    if (!confirm(`Delete the listener "${l.name}"? Its pending deliveries stop. This cannot be undone.`)) return;
    void action.run(async () => {
      await call("DELETE", path);
      onChange();
      return null;
    });
  };
  return (
    <>
      <div class="actions">
        {l.enabled === false && <button type="button" class="btn btn-primary btn-small" disabled={action.busy} onClick={() => setEnabled(true)}>Resume</button>}
        {l.enabled === true && <button type="button" class="btn btn-small" disabled={action.busy} onClick={() => setEnabled(false)}>Pause</button>}
        <button type="button" class="btn btn-small" aria-expanded={open === "settings"} onClick={() => toggle("settings")}>Settings…</button>
        <button type="button" class="btn btn-small" aria-expanded={open === "replay"} onClick={() => toggle("replay")}>Replay…</button>
        <button type="button" class="btn btn-small btn-danger-text" disabled={action.busy} onClick={remove}>Delete</button>
      </div>
      <ErrorBox error={action.error} />
      <Done>{action.done}</Done>
      {open === "settings" && <ListenerSettings path={path} queueId={queue.id} listener={l} onChange={onChange} onClose={() => setOpen(null)} />}
      {open === "replay" && <ReplayForm path={`${path}/replay`} listener={l.name} onDone={onChange} onClose={() => setOpen(null)} />}
    </>
  );
}
