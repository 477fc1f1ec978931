/**
 * The organization, for the key that may read it (the owner key): its name, and the queue every usage event but
 * message_added is also published to, so listeners there hear of a listener going down without polling.
 */
import { useState } from "preact/hooks";
import { call, enc, type ApiError } from "../lib/api.ts";
import { remember, readClient, useOrganization, type ApiClient } from "../lib/organization.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { Field, value } from "../parts/fields.tsx";
import { Card, Id, PageHeader } from "../parts/layout.tsx";
import { Done, Empty, ErrorBox, Loading } from "../parts/notices.tsx";

type QueueItem = { id: string; name: string };
const PAGE = 100;
const MAX_PAGES = 10;

/** The organization's queues for the select, a page at a time up to a thousand. */
async function allQueues(): Promise<QueueItem[]> {
  const out: QueueItem[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const reply = await call<{ queues: QueueItem[] }>("GET", `/v1/queues?per_page=${PAGE}&page=${page}`);
    out.push(...reply.body.queues);
    if (reply.body.queues.length < PAGE || out.length >= (reply.total ?? 0)) break;
  }
  return out;
}

export function OrganizationView() {
  const found = useOrganization();
  const [entered, setEntered] = useState<ApiClient | null>(null);
  const client = found?.client ?? entered;
  if (!found) return <><PageHeader title="Organization" /><Loading what="the organization" /></>;
  if (!found.owner) {
    return (
      <>
        <PageHeader title="Organization" />
        <Card><Empty title="This key cannot read the organization.">Only the organization's owner key may read and change it. Sign in with the owner key.</Empty></Card>
      </>
    );
  }
  if (!client) return <EnterId onFound={setEntered} />;
  return <Organization client={client} />;
}

/** No usage event of the last 24 hours names the organization, so its id is asked for. */
function EnterId({ onFound }: { onFound: (client: ApiClient) => void }) {
  const [id, setId] = useState("");
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const client = await readClient(id.trim());
      remember(client);
      onFound(client);
      return null;
    });
  };
  return (
    <>
      <PageHeader title="Organization" />
      <Card title="Which organization?">
        <form class="form" onSubmit={submit}>
          <p class="muted small">No usage event of the last 24 hours names this key's organization, so the dashboard cannot tell its id.</p>
          <Field label="Organization id" hint={<>It starts with <code>org_</code>; <code>fanout orgs list</code> prints it, and fanout printed it when it first started.</>}>
            <input name="org-id" required autocomplete="off" spellcheck={false} value={id} onInput={(e) => setId(value(e))} />
          </Field>
          <ErrorBox error={action.error} context="Could not read the organization" />
          <div class="form-actions"><button type="submit" class="btn btn-primary" disabled={action.busy}>Open</button></div>
        </form>
      </Card>
    </>
  );
}

function Organization({ client: first }: { client: ApiClient }) {
  const polled = usePoll(() => readClient(first.id), [first.id], 10_000);
  const queues = usePoll(allQueues, [], 10_000);
  const client = polled.data ?? first;
  return (
    <>
      <PageHeader title="Organization" sub={<><span class="strong">{client.name}</span> <Id value={client.id} /></>} />
      <ErrorBox error={polled.error} context="Could not refresh the organization" />
      <Card title="Usage events as messages">
        <p class="muted small">
          Every usage event of the organization but <code>message_added</code> can also be published to one of its
          queues, as a message named by the event's type (<code>listener_state_changed</code>,{" "}
          <code>listener_disabled</code>, <code>message_missed</code>, <code>listener_added</code>, …) whose data is
          the event. Its listeners receive them as signed webhooks; a filter on names takes only some. Events about
          that queue's own messages and deliveries are not published to it again.
        </p>
        <EventsQueueForm client={client} queues={queues.data} queuesError={queues.error} onSaved={polled.refresh} />
      </Card>
    </>
  );
}

type FormProps = { client: ApiClient; queues: QueueItem[] | undefined; queuesError: ApiError | null; onSaved: () => void };

function EventsQueueForm({ client, queues, queuesError, onSaved }: FormProps) {
  // null: untouched, so a refresh of the organization shows through.
  const [choice, setChoice] = useState<string | null>(null);
  const action = useAction();
  const chosen = choice ?? client.events_queue_id ?? "";
  const nameOf = (id: string) => queues?.find((q) => q.id === id)?.name ?? id;
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const events_queue_id = chosen || null;
      const reply = await call<{ api_client: ApiClient }>("PUT", `/v1/api_clients/${enc(client.id)}`, { body: { events_queue_id } });
      remember(reply.body.api_client);
      setChoice(null);
      onSaved();
      return events_queue_id ? `Saved: usage events are now also published to ${nameOf(events_queue_id)}.` : "Saved: usage events are no longer published to a queue.";
    });
  };
  const listed = queues ?? [];
  const unlisted = client.events_queue_id && !listed.some((q) => q.id === client.events_queue_id);
  return (
    <form class="form" onSubmit={submit}>
      <Field label="Publish usage events to" narrow>
        <select name="events-queue" value={chosen} disabled={!queues} onChange={(e) => setChoice(value(e))}>
          <option value="">None</option>
          {listed.map((q) => <option key={q.id} value={q.id}>{q.name}</option>)}
          {unlisted && <option value={client.events_queue_id!}>{client.events_queue_id}</option>}
        </select>
      </Field>
      {!queues && !queuesError && <Loading what="the queues" />}
      <ErrorBox error={queuesError} context="Could not list the queues" />
      {client.events_queue_id && (
        <p class="small">
          Published to <Link to={`/queues/${client.events_queue_id}`}>{nameOf(client.events_queue_id)}</Link>: its listeners receive them.
        </p>
      )}
      <ErrorBox error={action.error} context="The organization was not saved" />
      <Done>{action.done}</Done>
      <div class="form-actions"><button type="submit" class="btn btn-primary" disabled={action.busy || !queues}>Save</button></div>
    </form>
  );
}

