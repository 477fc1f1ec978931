/**
 * The portal's one page: the session's listeners of its queue, each with its state, counters, missed messages and
 * the portal's panels (deliveries, test, secret, settings), and a form to add one when the session may manage.
 */
import { call, enc } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { usePoll } from "../lib/poll.ts";
import { Card, PageHeader } from "../parts/layout.tsx";
import { Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import { ListenerCard } from "../views/listener-card.tsx";
import { AddListener } from "../views/listeners.tsx";
import type { Queue } from "../views/queue.tsx";
import type { PortalSession } from "./portal-app.tsx";
import { ListenerPanels, type PortalListener } from "./panels.tsx";

/** Polled less often than the dashboard: a customer's page stays open for long, and each listener adds its own poll. */
const EVERY_MS = 5000;

export function PortalHome({ session: s, queue }: { session: PortalSession; queue: Queue }) {
  const list = usePoll(async () => {
    const reply = await call<{ listeners: PortalListener[] }>("GET", `/v1/queues/${enc(queue.id)}/listeners?per_page=100`);
    return { listeners: reply.body.listeners, total: reply.total ?? reply.body.listeners.length };
  }, [queue.id], EVERY_MS);
  const data = list.data;
  return (
    <>
      <PageHeader
        title="Webhook listeners"
        sub={<span>Messages from <strong>{queue.name}</strong>{data ? ` · ${plural(data.total, "listener")}` : ""}{s.can_manage ? "" : " · view only"}</span>}
      />
      <ErrorBox error={list.error} context="Could not list the listeners" />
      {!data && !list.error && <Loading what="the listeners" />}
      {data && data.total === 0 && (
        <Card>
          <Empty title="No listeners yet.">
            {s.can_manage ? "Add one below: every message published after that is sent to its notify URL, signed." : "None has been set up for you yet."}
          </Empty>
        </Card>
      )}
      {data && data.total > data.listeners.length && <p class="muted small">Showing the first {data.listeners.length} of {data.total} listeners.</p>}
      <div class="listener-grid portal-grid">
        {data?.listeners.map((l) => (
          <ListenerCard key={l.id} queue={queue} listener={l} onChange={list.refresh} manage={s.can_manage}>
            <ListenerPanels queue={queue} listener={l} manage={s.can_manage} onChange={list.refresh} />
          </ListenerCard>
        ))}
      </div>
      {s.can_manage && <AddListener queue={queue} onAdded={list.refresh} />}
    </>
  );
}
