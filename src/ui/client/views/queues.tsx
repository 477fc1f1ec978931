/** The queues of the organization with their listeners' health, and a form to create one. */
import { useState } from "preact/hooks";
import { call, enc, get } from "../lib/api.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { navigate, Link } from "../lib/router.ts";
import { count, plural } from "../lib/format.ts";
import { Card, Id, PageHeader } from "../parts/layout.tsx";
import { Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import { Cell, Pager } from "../parts/data.tsx";
import { Badge, type Tone } from "../parts/badges.tsx";
import type { Listener } from "./listener-card.tsx";
import { Field, parseJson, value } from "../parts/fields.tsx";
import { ApiError } from "../lib/api.ts";

type QueueItem = { id: string; name: string };
const SIZE = 25;

type Row = QueueItem & { listeners: Listener[] | null; messages: number | null };

/** Each queue with its listeners' health and its number of messages; a part the key may not read stays empty. */
async function loadPage(page: number): Promise<{ rows: Row[]; total: number }> {
  const reply = await call<{ queues: QueueItem[] }>("GET", `/v1/queues?per_page=${SIZE}&page=${page}`);
  const rows = await Promise.all(reply.body.queues.map(async (q) => {
    const base = `/v1/queues/${enc(q.id)}`;
    const [listeners, messages] = await Promise.all([
      get<{ listeners: Listener[] }>(`${base}/listeners?per_page=100`).then((b) => b.listeners, () => null),
      call("GET", `${base}/messages?per_page=1`).then((r) => r.total, () => null),
    ]);
    return { ...q, listeners, messages };
  }));
  return { rows, total: reply.total ?? rows.length };
}

export function QueuesView() {
  const [page, setPage] = useState(1);
  const list = usePoll(() => loadPage(page), [page], 5000);
  const data = list.data;

  return (
    <>
      <PageHeader title="Queues" sub={data ? plural(data.total, "queue") : undefined} />
      <ErrorBox error={list.error} context="Could not list the queues" />
      <Card title="All queues">
        {!data && !list.error && <Loading what="queues" />}
        {data && data.total === 0 && (
          <Empty title="No queues yet.">Create the first one below; then add a listener to it and publish a test message.</Empty>
        )}
        {data && data.rows.length > 0 && (
          <table class="table table-stack">
            <thead><tr><th>Queue</th><th>Listeners</th><th class="num">Messages</th></tr></thead>
            <tbody>
              {data.rows.map((q) => (
                <tr key={q.id}>
                  <td data-label="Queue"><Link to={`/queues/${q.id}`} class="strong">{q.name}</Link><div><Id value={q.id} /></div></td>
                  <Cell label="Listeners">{q.listeners && <Health listeners={q.listeners} />}</Cell>
                  <Cell label="Messages" class="num">{q.messages !== null && count(q.messages)}</Cell>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {data && <Pager page={page} total={data.total} size={SIZE} onPage={setPage} />}
      </Card>
      <CreateQueue />
    </>
  );
}

const HEALTH: [state: string, tone: Tone, label: string][] = [
  ["down", "bad", "down"], ["unstable", "warn", "unstable"], ["pending", "muted", "pending"], ["stable", "ok", "stable"],
];

function Health({ listeners }: { listeners: Listener[] }) {
  if (listeners.length === 0) return <span class="muted">None yet</span>;
  const paused = listeners.filter((l) => l.enabled === false).length;
  return (
    <div class="badges">
      {HEALTH.map(([state, tone, label]) => {
        const n = listeners.filter((l) => l.liveness.state === state).length;
        return n > 0 && <Badge key={state} tone={tone}>{n} {label}</Badge>;
      })}
      {paused > 0 && <Badge tone="warn">{paused} paused</Badge>}
    </div>
  );
}

function CreateQueue() {
  const [name, setName] = useState("");
  const [schema, setSchema] = useState("");
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body: Record<string, unknown> = {};
      if (name.trim()) body.name = name.trim();
      if (schema.trim()) {
        const parsed = parseJson(schema, "The schema");
        if (!parsed.ok) throw new ApiError(0, "Check the schema", parsed.message);
        body.schema = parsed.value;
      }
      const reply = await call<{ queue: QueueItem }>("POST", "/v1/queues", { body });
      navigate(`/queues/${reply.body.queue.id}`);
      return null;
    });
  };
  return (
    <Card title="Create a queue">
      <form class="form" onSubmit={submit}>
        <Field label="Name" hint="Unique in the organization; left empty, fanout picks one.">
          <input name="queue-name" value={name} onInput={(e) => setName(value(e))} maxLength={128} />
        </Field>
        <details class="disclosure">
          <summary>Add a message schema (optional)</summary>
          <Field label="Schema (JSON)" hint={<>Property names to directives, e.g. <code>{'{"order": {"type": "string"}}'}</code>. Messages that do not match are refused.</>} wide>
            <textarea name="queue-schema" rows={6} class="mono" value={schema} onInput={(e) => setSchema(value(e))} spellcheck={false} />
          </Field>
        </details>
        <ErrorBox error={action.error} context="The queue was not created" />
        <div class="form-actions"><button type="submit" class="btn btn-primary" disabled={action.busy}>Create queue</button></div>
      </form>
    </Card>
  );
}
