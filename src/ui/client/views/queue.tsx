/** One queue: its header, and tabs for its listeners, messages, publishing and schema. */
import { call, enc, get } from "../lib/api.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { navigate } from "../lib/router.ts";
import { Badge } from "../parts/badges.tsx";
import { Id, PageHeader, Tabs } from "../parts/layout.tsx";
import { ErrorBox, Loading } from "../parts/notices.tsx";
import { ListenersTab } from "./listeners.tsx";
import { MessagesTab } from "./messages.tsx";
import { MessageView } from "./message.tsx";
import { PublishTab } from "./publish.tsx";
import { SchemaTab } from "./schema.tsx";

export type QueueTab = "listeners" | "messages" | "message" | "publish" | "schema";
export type Queue = { id: string; name: string; schema: Record<string, unknown> | null; schema_id: string | null };

export function QueueView({ queueId, tab, messageId }: { queueId: string; tab: QueueTab; messageId?: string }) {
  const queue = usePoll(() => get<{ queue: Queue }>(`/v1/queues/${enc(queueId)}`).then((b) => b.queue), [queueId], 5000);
  const remove = useAction();
  const base = `/queues/${queueId}`;
  const q = queue.data;

  if (!q) {
    return (
      <>
        <PageHeader crumbs={[["/queues", "Queues"]]} title="Queue" />
        <ErrorBox error={queue.error} context="Could not load the queue" />
        {!queue.error && <Loading what="the queue" />}
      </>
    );
  }

  const deleteQueue = () => {
    if (!confirm(`Delete the queue "${q.name}" with all its listeners and messages? This cannot be undone.`)) return;
    void remove.run(async () => {
      await call("DELETE", `/v1/queues/${enc(q.id)}`);
      navigate("/queues");
      return null;
    });
  };

  const current = tab === "message" ? `${base}/messages` : tab === "listeners" ? base : `${base}/${tab}`;
  return (
    <>
      <PageHeader
        crumbs={[["/queues", "Queues"]]}
        title={q.name}
        sub={<><Id value={q.id} /> {q.schema ? <Badge tone="info">Schema</Badge> : <Badge tone="muted">Any JSON</Badge>}</>}
        actions={<button type="button" class="btn btn-small btn-danger" onClick={deleteQueue} disabled={remove.busy}>Delete queue</button>}
      />
      <ErrorBox error={queue.error} context="Could not refresh the queue" />
      <ErrorBox error={remove.error} context="The queue was not deleted" />
      <Tabs current={current} tabs={[[base, "Listeners"], [`${base}/messages`, "Messages"], [`${base}/publish`, "Publish"], [`${base}/schema`, "Schema"]]} />
      {tab === "listeners" && <ListenersTab queue={q} />}
      {tab === "messages" && <MessagesTab queue={q} />}
      {tab === "message" && messageId && <MessageView queue={q} messageId={messageId} />}
      {tab === "publish" && <PublishTab queue={q} />}
      {tab === "schema" && <SchemaTab queue={q} />}
    </>
  );
}
