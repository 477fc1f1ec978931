/** Creating an API key: a name and scopes (none means the default set); the secret is shown once. */
import { useState } from "preact/hooks";
import { call } from "../lib/api.ts";
import { useAction } from "../lib/poll.ts";
import { Card } from "../parts/layout.tsx";
import { ErrorBox } from "../parts/notices.tsx";
import { Field, value } from "../parts/fields.tsx";
import type { Scope } from "./keys.tsx";

const RESOURCES = ["queues", "listeners", "messages", "schemas", "events", "stats"];
type Row = { resource: string; access: string; targets: string };

export function CreateKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [rows, setRows] = useState<Row[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    setSecret(null);
    void action.run(async () => {
      const scopes: Scope[] = rows.map((r) => ({ resource: r.resource, access: r.access, targets: r.targets.split(",").map((t) => t.trim()).filter(Boolean) }));
      const body: Record<string, unknown> = {};
      if (name.trim()) body.name = name.trim();
      if (scopes.length) body.scopes = scopes;
      const reply = await call<{ api_key: string }>("POST", "/v1/api_keys", { body });
      setSecret(reply.body.api_key);
      setName("");
      setRows([]);
      onCreated();
      return null;
    });
  };

  return (
    <Card title="Create an API key">
      <form class="form" onSubmit={submit}>
        <Field label="Name">
          <input name="key-name" maxLength={128} value={name} onInput={(e) => setName(value(e))} />
        </Field>
        <ScopeRows rows={rows} setRows={setRows} />
        <ErrorBox error={action.error} context="The key was not created" />
        {secret && (
          <div class="notice notice-ok" role="status">
            Key created. Copy it now: it is shown only this once.
            <code class="secret">{secret}</code>
          </div>
        )}
        <div class="form-actions"><button type="submit" class="btn btn-primary" disabled={action.busy}>Create key</button></div>
      </form>
    </Card>
  );
}

/** Scopes as rows of resource, access and targets; no row means the default set. */
function ScopeRows({ rows, setRows }: { rows: Row[]; setRows: (rows: Row[]) => void }) {
  const update = (i: number, field: keyof Row) => (e: Event) => setRows(rows.map((r, j) => (j === i ? { ...r, [field]: value(e) } : r)));
  return (
    <fieldset class="scope-rows">
      <legend>Scopes</legend>
      {rows.length === 0 && <p class="muted small">None chosen: the key gets read and write on every queue, listener, message, schema, event and stat.</p>}
      {rows.map((r, i) => (
        <div class="scope-row" key={i}>
          <select aria-label="Resource" value={r.resource} onChange={update(i, "resource")}>{RESOURCES.map((x) => <option key={x}>{x}</option>)}</select>
          <select aria-label="Access" value={r.access} onChange={update(i, "access")}><option value="read">read</option><option value="write">write (and read)</option></select>
          <input aria-label="Targets" placeholder="* or ids, comma separated" value={r.targets} onInput={update(i, "targets")} />
          <button type="button" class="btn btn-small btn-ghost" onClick={() => setRows(rows.filter((_, j) => j !== i))}>Remove</button>
        </div>
      ))}
      <button type="button" class="btn btn-small" onClick={() => setRows([...rows, { resource: "messages", access: "write", targets: "*" }])}>Add a scope</button>
    </fieldset>
  );
}
