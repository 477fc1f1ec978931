/**
 * A queue's listeners with their state, counters and current pace, and a form to add one. Each poll also reads
 * the line of every FIFO listener, which only GET of the one listener carries.
 */
import { useRef, useState } from "preact/hooks";
import { ApiError, call, enc } from "../lib/api.ts";
import { EMPTY_DRAFT, filterOf } from "../lib/filters.ts";
import { nextSample, type PaceSample } from "../lib/pace.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { Card, Id } from "../parts/layout.tsx";
import { Done, Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import { Field, value } from "../parts/fields.tsx";
import { ListenerCard, type Listener } from "./listener-card.tsx";
import { FilterEditor, useFilterTrial } from "./filter-editor.tsx";
import type { Line } from "./listener-pace.tsx";
import type { Queue } from "./queue.tsx";

export function ListenersTab({ queue }: { queue: Queue }) {
  const samples = useRef(new Map<string, PaceSample>());
  const list = usePoll(async () => {
    const path = `/v1/queues/${enc(queue.id)}/listeners`;
    const reply = await call<{ listeners: Listener[] }>("GET", `${path}?per_page=100`);
    const at = Date.now();
    const listeners = reply.body.listeners;
    for (const l of listeners) samples.current.set(l.id, nextSample(samples.current.get(l.id), l.messages.acknowledged_count, at));
    const lines = await linesOf(path, listeners);
    return { listeners, lines, total: reply.total ?? listeners.length };
  }, [queue.id]);
  const data = list.data;
  return (
    <>
      <ErrorBox error={list.error} context="Could not list the listeners" />
      {!data && !list.error && <Loading what="listeners" />}
      {data && data.total === 0 && (
        <Card>
          <Empty title="No listeners on this queue yet.">
            Add one below: fanout sends every message published after that to its notify URL, and probes its liveness URL.
          </Empty>
        </Card>
      )}
      {data && data.total > data.listeners.length && (
        <p class="muted small">Showing the first {data.listeners.length} of {data.total} listeners.</p>
      )}
      <div class="listener-grid">
        {data?.listeners.map((l) => (
          <ListenerCard key={l.id} queue={queue} listener={l} onChange={list.refresh} pace={samples.current.get(l.id)?.rate} line={data.lines.get(l.id)} />
        ))}
      </div>
      <AddListener queue={queue} onAdded={list.refresh} />
    </>
  );
}

/** The lines of the FIFO listeners, read together; a listener deleted since the list has none to show. */
async function linesOf(path: string, listeners: Listener[]): Promise<Map<string, Line>> {
  const fifo = listeners.filter((l) => l.ordering === "fifo");
  const read = async (l: Listener): Promise<[string, Line | undefined]> => {
    try {
      return [l.id, (await call<{ listener: { line?: Line } }>("GET", `${path}/${enc(l.id)}`)).body.listener.line];
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return [l.id, undefined];
      throw error;
    }
  };
  const lines = new Map<string, Line>();
  for (const [id, line] of await Promise.all(fifo.map(read))) if (line) lines.set(id, line);
  return lines;
}

export function AddListener({ queue, onAdded }: { queue: Queue; onAdded: () => void }) {
  const [form, setForm] = useState({ name: "", notify_url: "", liveness_url: "" });
  const action = useAction();
  const [draft, setDraft] = useState(EMPTY_DRAFT);
  const { trial, checking } = useFilterTrial(queue.id, draft);
  const [secret, setSecret] = useState<{ name: string; id: string; secret: string } | null>(null);
  const set = (field: keyof typeof form) => (e: Event) => setForm({ ...form, [field]: value(e) });
  const submit = (event: Event) => {
    event.preventDefault();
    setSecret(null);
    void action.run(async () => {
      const parsed = filterOf(draft);
      if (!parsed.ok) throw new ApiError(0, "Check the filter", parsed.message);
      const body = parsed.filter ? { ...form, filter: parsed.filter } : form;
      const reply = await call<{ listener: { id: string; name: string }; secret: string }>("POST", `/v1/queues/${enc(queue.id)}/listeners`, { body });
      setSecret({ ...reply.body.listener, secret: reply.body.secret });
      setForm({ name: "", notify_url: "", liveness_url: "" });
      setDraft(EMPTY_DRAFT);
      onAdded();
      return null;
    });
  };
  return (
    <Card title="Add a listener">
      <form class="form form-grid" onSubmit={submit}>
        <Field label="Name" hint="Unique on this queue.">
          <input name="listener-name" required maxLength={128} value={form.name} onInput={set("name")} />
        </Field>
        <Field label="Notify URL" hint="Each message is POSTed here.">
          <input name="notify-url" type="url" required placeholder="https://example.com/webhook" value={form.notify_url} onInput={set("notify_url")} />
        </Field>
        <Field label="Liveness URL" hint="Probed with GET; a 2xx answer counts as alive.">
          <input name="liveness-url" type="url" required placeholder="https://example.com/health" value={form.liveness_url} onInput={set("liveness_url")} />
        </Field>
        <details class="disclosure field-wide">
          <summary>Only some messages…</summary>
          <FilterEditor draft={draft} onDraft={setDraft} trial={trial} checking={checking} />
        </details>
        <div class="form-actions field-wide"><button type="submit" class="btn btn-primary" disabled={action.busy}>Add listener</button></div>
      </form>
      <ErrorBox error={action.error} context="The listener was not added" />
      {secret && (
        <Done>
          Listener <strong>{secret.name}</strong> added (<Id value={secret.id} />). Its deliveries are signed with
          this secret (Standard Webhooks); it can be read again at <code>GET …/listeners/{secret.id}/secret</code>:
          <code class="secret">{secret.secret}</code>
        </Done>
      )}
    </Card>
  );
}
