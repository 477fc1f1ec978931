/**
 * A listener's own headers (docs/api.md, "Listeners: filters and headers"). Values may be credentials, so once
 * saved the form shows only names: a row can be replaced or removed, never read back. A PUT replaces the whole
 * set, so saving sends every kept row with the value the API gave (a key that may write the listener gets the
 * values; one that may only read it gets "[hidden]" and no controls once a save is refused).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { useAction } from "../lib/poll.ts";
import { value } from "../parts/fields.tsx";
import { Done, ErrorBox } from "../parts/notices.tsx";

export type Headers = Record<string, string>;
/** `kept`: a saved row's value as the API gave it, sent again unless the row is being replaced. */
type Row = { id: number; name: string; value: string; kept: string; saved: boolean; replacing: boolean };

let nextRow = 0;
const rowsOf = (headers: Headers | null): Row[] =>
  Object.entries(headers ?? {}).map(([name, v]) => ({ id: nextRow++, name, value: v, kept: v, saved: true, replacing: false }));
const blank = (): Row => ({ id: nextRow++, name: "", value: "", kept: "", saved: false, replacing: false });

/** The set the rows stand for; a new row left empty is ignored, a half-filled one refused here. */
function headersOf(rows: Row[]): Headers {
  const out: Headers = {};
  const seen = new Set<string>();
  for (const r of rows) {
    const name = r.name.trim();
    if (!r.saved && !name && !r.value) continue;
    if (!name) throw new ApiError(0, "Give every header a name", "A row has a value but no name.");
    if (seen.has(name.toLowerCase())) throw new ApiError(0, "Header names must differ", `"${name}" appears twice (names are compared ignoring case).`);
    seen.add(name.toLowerCase());
    out[name] = r.value;
  }
  return out;
}

type Props = { headers: Headers | null; save: (body: { headers: Headers | null }) => Promise<void>; readOnly: boolean };

export function HeadersForm({ headers, save, readOnly }: Props) {
  const [saved, setSaved] = useState<Headers | null>(headers);
  const [rows, setRows] = useState(() => rowsOf(headers));
  const action = useAction();
  useEffect(() => void (readOnly && setRows(rowsOf(saved))), [readOnly]);

  const update = (id: number, patch: Partial<Row>) => setRows(rows.map((r) => (r.id === id ? { ...r, ...patch } : r)));
  const dirty = (() => {
    try {
      return JSON.stringify(headersOf(rows)) !== JSON.stringify(saved ?? {});
    } catch {
      return true; // a row the form refuses is a change not saved yet
    }
  })();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const set = headersOf(rows);
      const body = Object.keys(set).length > 0 ? set : null;
      await save({ headers: body });
      setSaved(body);
      setRows(rowsOf(body));
      return body ? `Saved: ${plural(Object.keys(body).length, "header")} sent with every delivery and probe. Values are not shown again.` : "Saved: the listener has no headers of its own.";
    });
  };

  return (
    <form class="form settings-section" onSubmit={submit}>
      <h5>Headers</h5>
      <p class="muted small">
        Sent with every delivery and liveness probe, e.g. a token for a gateway in front of the receiver. fanout's own
        (<code>Content-Type</code>, <code>webhook-*</code>, …) cannot be set.
      </p>
      {rows.length === 0 && <p class="muted small">No headers of its own.</p>}
      {rows.length > 0 && (
        <ul class="header-rows">
          {rows.map((r) => <HeaderRow key={r.id} row={r} readOnly={readOnly} update={update} remove={() => setRows(rows.filter((x) => x.id !== r.id))} />)}
        </ul>
      )}
      <ErrorBox error={action.error} context="The headers were not saved" />
      <Done>{action.done}</Done>
      {!readOnly && (
        <div class="form-actions form-actions-wrap">
          <button type="button" class="btn btn-small" onClick={() => setRows([...rows, blank()])}>Add a header</button>
          <button type="submit" class="btn btn-primary btn-small" disabled={action.busy || !dirty}>Save headers</button>
          {dirty && <span class="muted small unsaved">Not saved yet</span>}
        </div>
      )}
    </form>
  );
}

type RowProps = { row: Row; readOnly: boolean; update: (id: number, patch: Partial<Row>) => void; remove: () => void };

function HeaderRow({ row: r, readOnly, update, remove }: RowProps) {
  const hidden = r.saved && !r.replacing;
  return (
    <li class="header-row" data-header={r.saved ? r.name : undefined}>
      {r.saved
        ? <code class="header-name">{r.name}</code>
        : <input name="header-name" aria-label="Header name" placeholder="Authorization" autocomplete="off" spellcheck={false} value={r.name} onInput={(e) => update(r.id, { name: value(e) })} />}
      {hidden
        ? <span class="header-hidden">value hidden</span>
        : <input name="header-value" aria-label={`Value of ${r.name || "the header"}`} placeholder={r.replacing ? "New value" : "Bearer …"} autocomplete="off" spellcheck={false} value={r.value} onInput={(e) => update(r.id, { value: value(e) })} />}
      {!readOnly && (
        <div class="header-actions">
          {hidden && <button type="button" class="btn btn-small btn-ghost" onClick={() => update(r.id, { replacing: true, value: "" })}>Replace</button>}
          {r.replacing && <button type="button" class="btn btn-small btn-ghost" onClick={() => update(r.id, { replacing: false, value: r.kept })}>Keep</button>}
          <button type="button" class="btn btn-small btn-ghost btn-danger-text" onClick={remove}>Remove</button>
        </div>
      )}
    </li>
  );
}
