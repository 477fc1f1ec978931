/**
 * A listener's name, URLs and pace in the portal (its filter and headers are the card's own settings). Only what
 * changed is sent (`PUT`); the server checks it all and names each problem.
 */
import { useState } from "preact/hooks";
import { call } from "../lib/api.ts";
import { useAction } from "../lib/poll.ts";
import { Field, value } from "../parts/fields.tsx";
import { Done, ErrorBox } from "../parts/notices.tsx";
import type { PortalListener } from "./panels.tsx";

type Props = { path: string; listener: PortalListener; onSaved: () => void; onClose: () => void };

const numberText = (v: number | null | undefined) => (v === null || v === undefined ? "" : String(v));

function initial(l: PortalListener) {
  return {
    name: l.name, notify_url: l.notify_url, liveness_url: l.liveness_url, rate_limit: numberText(l.rate_limit),
    concurrency: numberText(l.concurrency), ordering: l.ordering ?? "unordered",
  };
}
type Form = ReturnType<typeof initial>;

/** The fields that differ from the listener as it is, as the API takes them; an empty box is null. */
function changes(form: Form, before: Form): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of ["name", "notify_url", "liveness_url", "ordering"] as const) if (form[field] !== before[field]) body[field] = form[field];
  for (const field of ["rate_limit", "concurrency"] as const) {
    if (form[field].trim() !== before[field]) body[field] = form[field].trim() === "" ? null : Number(form[field]);
  }
  return body;
}

export function EditForm({ path, listener, onSaved, onClose }: Props) {
  const [before] = useState(() => initial(listener));
  const [form, setForm] = useState(before);
  const action = useAction();
  const set = (field: keyof Form) => (e: Event) => setForm({ ...form, [field]: value(e) });
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = changes(form, before);
      if (Object.keys(body).length === 0) return "Nothing changed.";
      await call("PUT", path, { body });
      onSaved();
      return "Saved.";
    });
  };
  return (
    <form class="form portal-section portal-edit" onSubmit={submit} aria-label="Name, URLs and pace">
      <h4 class="portal-section-title">Name, URLs and pace</h4>
      <div class="form-grid">
        <Field label="Name"><input name="edit-name" required maxLength={128} value={form.name} onInput={set("name")} /></Field>
        <Field label="Ordering" hint="In order: one message at a time, each after the one before has been delivered or given up.">
          <select name="edit-ordering" value={form.ordering} onChange={set("ordering")}>
            <option value="unordered">Any order</option>
            <option value="fifo">In order (FIFO)</option>
          </select>
        </Field>
        <Field label="Notify URL" wide><input name="edit-notify-url" type="url" required value={form.notify_url} onInput={set("notify_url")} /></Field>
        <Field label="Liveness URL" wide><input name="edit-liveness-url" type="url" required value={form.liveness_url} onInput={set("liveness_url")} /></Field>
        <Field label="Rate limit" hint="Deliveries started per second at most; empty: no limit.">
          <input name="edit-rate-limit" type="number" min={1} max={10000} value={form.rate_limit} onInput={set("rate_limit")} />
        </Field>
        <Field label="Concurrency" hint="Requests in flight at most; empty: the server's default.">
          <input name="edit-concurrency" type="number" min={1} max={256} value={form.concurrency} onInput={set("concurrency")} />
        </Field>
      </div>
      <ErrorBox error={action.error} context="The settings were not saved" />
      <Done>{action.done}</Done>
      <div class="form-actions">
        <button type="submit" class="btn btn-primary btn-small" disabled={action.busy}>Save</button>
        <button type="button" class="btn btn-small btn-ghost" onClick={onClose}>Close</button>
      </div>
    </form>
  );
}
