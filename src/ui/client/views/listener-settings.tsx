/**
 * A listener's settings, opened from its card: one section per concern, each saved on its own with a PUT of
 * its fields only (an absent field stays as it is). A new setting (pace, order) is one more section here.
 */
import { useState } from "preact/hooks";
import { ApiError, call } from "../lib/api.ts";
import { draftOf, EMPTY_DRAFT, filterOf } from "../lib/filters.ts";
import { useAction } from "../lib/poll.ts";
import { Done, ErrorBox } from "../parts/notices.tsx";
import { FilterEditor, useFilterTrial } from "./filter-editor.tsx";
import { HeadersForm } from "./headers-form.tsx";
import { PaceForm } from "./pace-form.tsx";
import type { Listener } from "./listener-card.tsx";

/** Saves some of the listener's fields; rejects with the API's error. */
export type Save = (body: Record<string, unknown>) => Promise<void>;

type Props = { path: string; queueId: string; listener: Listener; onChange: () => void; onClose: () => void };

export function ListenerSettings({ path, queueId, listener: l, onChange, onClose }: Props) {
  // Learnt from a refused save, not guessed: what a key may do is the server's to say.
  const [readOnly, setReadOnly] = useState(false);
  const save: Save = async (body) => {
    try {
      await call("PUT", path, { body });
    } catch (error) {
      if (error instanceof ApiError && error.status === 403 && error.retryAfter === undefined) setReadOnly(true);
      throw error;
    }
    onChange();
  };
  return (
    <div class="settings">
      <h4 class="settings-title">Settings of {l.name}</h4>
      {readOnly && (
        <p class="notice notice-warn">This key may read this listener but not change it: its header values stay hidden from it. Filters can still be tried.</p>
      )}
      <FilterSettings queueId={queueId} listener={l} save={save} readOnly={readOnly} />
      <HeadersForm headers={l.headers ?? null} save={save} readOnly={readOnly} />
      {l.ordering !== undefined && <PaceForm listener={l} save={save} readOnly={readOnly} />}
      <div class="form-actions"><button type="button" class="btn btn-small btn-ghost" onClick={onClose}>Close</button></div>
    </div>
  );
}

function FilterSettings({ queueId, listener: l, save, readOnly }: { queueId: string; listener: Listener; save: Save; readOnly: boolean }) {
  const [draft, setDraft] = useState(() => draftOf(l.filter));
  const { trial, checking } = useFilterTrial(queueId, draft);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const parsed = filterOf(draft);
      if (!parsed.ok) throw new ApiError(0, "Check the filter", parsed.message);
      await save({ filter: parsed.filter });
      return parsed.filter ? "Filter saved: it applies to messages published from now on." : "Saved without a filter: every message published from now on goes to this listener.";
    });
  };
  const remove = () =>
    void action.run(async () => {
      await save({ filter: null });
      setDraft(EMPTY_DRAFT);
      return "Filter removed: every message published from now on goes to this listener.";
    });
  return (
    <form class="form settings-section" onSubmit={submit}>
      <h5>Which messages it receives</h5>
      <FilterEditor draft={draft} onDraft={setDraft} trial={trial} checking={checking} />
      <ErrorBox error={action.error} context="The filter was not saved" />
      <Done>{action.done}</Done>
      {!readOnly && (
        <div class="form-actions">
          <button type="submit" class="btn btn-primary btn-small" disabled={action.busy || trial.kind === "invalid"}>Save filter</button>
          {l.filter && <button type="button" class="btn btn-small btn-ghost" disabled={action.busy} onClick={remove}>Remove filter</button>}
        </div>
      )}
    </form>
  );
}
