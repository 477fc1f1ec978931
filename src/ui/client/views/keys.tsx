/**
 * API keys, for a key that may manage them (only the owner key holds the protected api_keys scope; any other
 * key gets 403, shown here as what it means rather than as a failure).
 */
import { call, enc, type ApiError } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { Badge } from "../parts/badges.tsx";
import { Card, Id, PageHeader } from "../parts/layout.tsx";
import { Done, Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import { CreateKey } from "./key-form.tsx";

export type Scope = { resource: string; access: string; targets: string[] };
type ApiKey = { id: string; name: string; status: string; scopes: Scope[] };

const PROTECTED = new Set(["api_keys", "api_clients", "subscriptions"]);

export function KeysView() {
  const list = usePoll(async () => {
    const reply = await call<{ api_keys: ApiKey[] }>("GET", "/v1/api_keys?per_page=100");
    return { keys: reply.body.api_keys, total: reply.total ?? reply.body.api_keys.length };
  }, []);
  if (list.error?.status === 403 && list.error.retryAfter === undefined) return <NotAllowed error={list.error} />;
  const data = list.data;
  return (
    <>
      <PageHeader title="API keys" sub={data ? plural(data.total, "key") : undefined} />
      <ErrorBox error={list.error} context="Could not list the API keys" />
      <Card title="Keys of this organization">
        {!data && !list.error && <Loading what="API keys" />}
        {data && data.keys.length === 0 && <Empty title="No API keys." />}
        {data && data.keys.length > 0 && (
          <table class="table table-stack">
            <thead><tr><th>Name</th><th>Status</th><th>Scopes</th><th><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>{data.keys.map((k) => <KeyRow key={k.id} apiKey={k} onChange={list.refresh} />)}</tbody>
          </table>
        )}
        {data && data.total > data.keys.length && <p class="muted small">Showing the first {data.keys.length} of {data.total} keys.</p>}
      </Card>
      <CreateKey onCreated={list.refresh} />
    </>
  );
}

function NotAllowed({ error }: { error: ApiError }) {
  return (
    <>
      <PageHeader title="API keys" />
      <Card>
        <Empty title="This key cannot manage API keys.">
          Only the organization's owner key may list, create or disable keys; keys made through the API never can.
          Sign in with the owner key to manage keys.
        </Empty>
        <p class="muted small">The server answered {error.status} {error.title}{error.detail ? `: ${error.detail}` : "."}</p>
      </Card>
    </>
  );
}

function KeyRow({ apiKey: k, onChange }: { apiKey: ApiKey; onChange: () => void }) {
  const action = useAction();
  const owner = k.scopes.some((s) => PROTECTED.has(s.resource));
  const path = `/v1/api_keys/${enc(k.id)}`;
  const setStatus = (status: string) =>
    void action.run(async () => {
      await call("PUT", path, { body: { status } });
      onChange();
      return status === "enabled" ? "Enabled." : "Disabled: requests with this key now get 401.";
    });
  const remove = () => {
    if (!confirm(`Delete the API key "${k.name}"? Requests with it will get 401. This cannot be undone.`)) return;
    void action.run(async () => {
      await call("DELETE", path);
      onChange();
      return null;
    });
  };
  return (
    <tr data-key={k.name}>
      <td data-label="Name"><span class="strong">{k.name}</span> {owner && <Badge tone="info">Owner</Badge>}<div><Id value={k.id} /></div></td>
      <td data-label="Status">{k.status === "enabled" ? <Badge tone="ok">Enabled</Badge> : <Badge tone="muted">Disabled</Badge>}</td>
      <td data-label="Scopes"><Scopes scopes={k.scopes} /></td>
      <td class="cell-actions">
        {!owner && (
          <div class="actions">
            {k.status === "enabled"
              ? <button type="button" class="btn btn-small" disabled={action.busy} onClick={() => setStatus("disabled")}>Disable</button>
              : <button type="button" class="btn btn-small" disabled={action.busy} onClick={() => setStatus("enabled")}>Enable</button>}
            <button type="button" class="btn btn-small btn-danger-text" disabled={action.busy} onClick={remove}>Delete</button>
          </div>
        )}
        <ErrorBox error={action.error} />
        <Done>{action.done}</Done>
      </td>
    </tr>
  );
}

/** One chip per resource and targets; write includes read, so a pair of them reads "read/write". */
function Scopes({ scopes }: { scopes: Scope[] }) {
  const grouped = new Map<string, { resource: string; targets: string; write: boolean }>();
  for (const s of scopes) {
    const key = `${s.resource} ${s.targets.join(", ")}`;
    const seen = grouped.get(key);
    grouped.set(key, { resource: s.resource, targets: s.targets.join(", "), write: (seen?.write ?? false) || s.access === "write" });
  }
  return (
    <ul class="scopes">
      {[...grouped].map(([key, g]) => (
        <li key={key} class="scope">
          {g.resource} <span class="muted">{g.write ? "read/write" : "read"}</span>{g.targets !== "*" && <span class="muted"> · {g.targets}</span>}
        </li>
      ))}
    </ul>
  );
}
