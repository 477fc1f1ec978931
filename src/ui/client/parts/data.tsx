/** Pieces that show data: JSON, times, table cells, a pager for paged lists. */
import type { ComponentChildren } from "preact";
import { dateTime, relative } from "../lib/format.ts";

/**
 * A cell of a table that turns into labelled lines on a phone (`table-stack`): `label` is shown before the value
 * there, and a cell with nothing to say is a dash on a desktop and left out on a phone.
 */
export function Cell({ label, children, class: className }: { label: string; children?: ComponentChildren; class?: string }) {
  const empty = children === null || children === undefined || children === false || children === "";
  return <td data-label={label} class={`${className ?? ""}${empty ? " cell-empty" : ""}`}>{empty ? <span class="muted">—</span> : children}</td>;
}

/** Message data as published; a string holding JSON is shown parsed, and said to be a string. */
export function Json({ value }: { value: unknown }) {
  let shown = value;
  let note: string | null = null;
  if (typeof value === "string") {
    try {
      shown = JSON.parse(value);
      note = "A string holding JSON, shown parsed.";
    } catch {
      note = "A string.";
    }
  }
  return (
    <div class="json">
      {note && <p class="muted small">{note}</p>}
      <pre>{typeof shown === "string" ? shown : JSON.stringify(shown, null, 2)}</pre>
    </div>
  );
}

export function When({ ms }: { ms: number | null }) {
  if (ms === null) return <span class="muted">—</span>;
  return <time dateTime={new Date(ms).toISOString()} title={dateTime(ms)}>{relative(ms)}</time>;
}

export function Pager({ page, total, size, onPage, label = "Pages" }: { page: number; total: number; size: number; onPage: (page: number) => void; label?: string }) {
  const last = Math.max(1, Math.ceil(total / size));
  if (last <= 1) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" class="btn btn-small" disabled={page <= 1} onClick={() => onPage(page - 1)}>‹ Previous</button>
      <span class="muted">Page {page} of {last}</span>
      <button type="button" class="btn btn-small" disabled={page >= last} onClick={() => onPage(page + 1)}>Next ›</button>
    </nav>
  );
}
