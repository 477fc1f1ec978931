/** Errors from the API as a person reads them, results of actions, and empty states that say what to do next. */
import type { ComponentChildren } from "preact";
import type { ApiError } from "../lib/api.ts";

export function ErrorBox({ error, context }: { error: ApiError | null; context?: string }) {
  if (!error) return null;
  const status = error.status > 0 ? ` (${error.status})` : "";
  return (
    <div class="notice notice-error" role="alert">
      <strong>{context ? `${context}: ` : ""}{error.title}{status}</strong>
      {error.detail && <p>{error.detail}</p>}
      {error.errors.length > 0 && (
        <ul class="field-errors">
          {error.errors.map((e) => <li key={e.path + e.message}><code>{e.path || "(body)"}</code> {e.message}</li>)}
        </ul>
      )}
      {error.retryAfter !== undefined && <p>Try again in {error.retryAfter} s.</p>}
    </div>
  );
}

export function Done({ children }: { children: ComponentChildren }) {
  if (!children) return null;
  return <div class="notice notice-ok" role="status">{children}</div>;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <strong>{title}</strong>
      {children && <p>{children}</p>}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="loading" aria-busy="true">Loading {what}…</p>;
}
