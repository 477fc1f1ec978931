/**
 * A queue's messages, newest first, each with a summary of its deliveries. The list endpoint gives ids and
 * names only, so each shown message is read once more; a message whose deliveries are all final is not read
 * again.
 */
import { useMemo, useState } from "preact/hooks";
import { enc, get, newestPage } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { usePoll } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { Badge, DeliveryBadge } from "../parts/badges.tsx";
import { Pager, When } from "../parts/data.tsx";
import { Card, Id } from "../parts/layout.tsx";
import { Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import type { Message } from "./message.tsx";
import type { Queue } from "./queue.tsx";

const SIZE = 20;
const STATES = ["acknowledged", "sending", "pending", "missed"] as const;
const isFinal = (m: Message) => m.deliveries.every((d) => d.state === "acknowledged" || d.state === "missed");

export function MessagesTab({ queue }: { queue: Queue }) {
  const [page, setPage] = useState(1);
  const known = useMemo(() => new Map<string, Message>(), [queue.id]);
  const list = usePoll(async () => {
    const base = `/v1/queues/${enc(queue.id)}/messages`;
    const { items, total } = await newestPage<{ id: string; name: string | null }>(base, "messages", page, SIZE);
    const details = await Promise.all(items.map(async (item) => {
      const cached = known.get(item.id);
      if (cached && isFinal(cached)) return cached;
      const message = await get<{ message: Message }>(`${base}/${enc(item.id)}`).then((b) => b.message, () => null);
      if (message) known.set(item.id, message);
      return message ?? { ...item, data: null, created_at: 0, deliveries: [] };
    }));
    return { messages: details, total };
  }, [queue.id, page]);
  const data = list.data;

  return (
    <Card title="Messages" actions={data ? <span class="muted small">{plural(data.total, "message")}, newest first</span> : undefined}>
      <ErrorBox error={list.error} context="Could not list the messages" />
      {!data && !list.error && <Loading what="messages" />}
      {data && data.total === 0 && (
        <Empty title="No messages in this queue yet.">
          <Link to={`/queues/${queue.id}/publish`}>Publish a test message</Link> to see it delivered to the listeners.
        </Empty>
      )}
      {data && data.messages.length > 0 && (
        <table class="table table-stack">
          <thead><tr><th>Message</th><th>Created</th><th>Deliveries</th></tr></thead>
          <tbody>
            {data.messages.map((m) => (
              <tr key={m.id}>
                <td data-label="Message">
                  <Link to={`/queues/${queue.id}/messages/${m.id}`} class="strong">{m.name ?? "Unnamed message"}</Link>
                  <div><Id value={m.id} /></div>
                </td>
                <td data-label="Created">{m.created_at ? <When ms={m.created_at} /> : <span class="muted">—</span>}</td>
                <td data-label="Deliveries"><Summary message={m} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data && <Pager page={page} total={data.total} size={SIZE} onPage={setPage} label="Message pages" />}
    </Card>
  );
}

function Summary({ message }: { message: Message }) {
  if (message.deliveries.length === 0) return <Badge tone="muted">No listeners</Badge>;
  if (message.deliveries.length === 1) return <DeliveryBadge state={message.deliveries[0]!.state} />;
  return (
    <div class="badges">
      {STATES.map((state) => {
        const n = message.deliveries.filter((d) => d.state === state).length;
        return n > 0 && <span key={state} class="summary"><span class="summary-n">{n}</span> <DeliveryBadge state={state} /></span>;
      })}
    </div>
  );
}
