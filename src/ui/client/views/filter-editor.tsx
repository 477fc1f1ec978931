/**
 * The filter editor, on a listener's settings and in the form that adds one. Name patterns get a box of their
 * own, one a line, as they are the common case (a listener for `order.*`) and a JSON array of strings is fiddly
 * to type; data conditions nest without bound, so they are JSON. As the user types, the server tries the filter
 * on the queue's newest messages (`filter_test`): the count before saving, and its errors by path otherwise.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, asApiError, call, enc } from "../lib/api.ts";
import { count } from "../lib/format.ts";
import { filterOf, partOf, type FilterDraft } from "../lib/filters.ts";
import { Field, value } from "../parts/fields.tsx";
import { ErrorBox } from "../parts/notices.tsx";

const DEBOUNCE_MS = 350;

export type Trial =
  | { kind: "every" }
  | { kind: "counted"; matched: number; of: number }
  | { kind: "invalid"; error: ApiError };

/** What the draft would take of the queue's newest messages; `checking` while a trial is on its way. */
export function useFilterTrial(queueId: string, draft: FilterDraft): { trial: Trial; checking: boolean } {
  const [trial, setTrial] = useState<Trial>({ kind: "every" });
  const [checking, setChecking] = useState(false);
  useEffect(() => {
    const parsed = filterOf(draft);
    if (!parsed.ok || parsed.filter === null) {
      setTrial(parsed.ok ? { kind: "every" } : { kind: "invalid", error: new ApiError(0, "Check the data conditions", parsed.message) });
      setChecking(false);
      return;
    }
    let live = true;
    setChecking(true);
    const timer = setTimeout(async () => {
      try {
        const reply = await call<{ matched: number; of: number }>("POST", `/v1/queues/${enc(queueId)}/filter_test`, { body: { filter: parsed.filter } });
        if (live) setTrial({ kind: "counted", matched: reply.body.matched, of: reply.body.of });
      } catch (error) {
        if (live) setTrial({ kind: "invalid", error: asApiError(error) });
      } finally {
        if (live) setChecking(false);
      }
    }, DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [queueId, draft.names, draft.data]);
  return { trial, checking };
}

type EditorProps = { draft: FilterDraft; onDraft: (draft: FilterDraft) => void; trial: Trial; checking: boolean };

export function FilterEditor({ draft, onDraft, trial, checking }: EditorProps) {
  const wrong = new Set(trial.kind === "invalid" ? trial.error.errors.map((e) => partOf(e.path)) : []);
  if (trial.kind === "invalid" && trial.error.status === 0) wrong.add("data");
  return (
    <div class="filter-editor">
      <Field label="Message names" hint={<>One pattern a line; <code>*</code> matches any run of characters, dots included. Empty: any message, named or not.</>}>
        <textarea
          name="filter-names" class="mono" rows={2} spellcheck={false} placeholder={"order.*\ninvoice.paid"}
          aria-invalid={wrong.has("names")} value={draft.names} onInput={(e) => onDraft({ ...draft, names: value(e) })}
        />
      </Field>
      <Field
        label="Data conditions (JSON)"
        hint={<>Dot paths to a value, or to operators: <code>$eq $ne $gt $gte $lt $lte $in $nin $exists $prefix $contains</code>; combine with <code>$and $or $not</code>. Empty: any data.</>}
      >
        <textarea
          name="filter-data" class="mono" rows={4} spellcheck={false} placeholder={'{"customer.tier": "gold", "total": {"$gte": 100}}'}
          aria-invalid={wrong.has("data")} value={draft.data} onInput={(e) => onDraft({ ...draft, data: value(e) })}
        />
      </Field>
      <TrialResult trial={trial} checking={checking} />
    </div>
  );
}

function TrialResult({ trial, checking }: { trial: Trial; checking: boolean }) {
  if (trial.kind === "invalid") return <ErrorBox error={trial.error} context={trial.error.status === 0 ? undefined : "Not a valid filter"} />;
  const text = trial.kind === "every" ? "Receives every message of the queue." : countText(trial.matched, trial.of);
  return (
    <p class={`filter-trial ${checking ? "filter-trial-checking" : ""}`} role="status" aria-busy={checking}>
      {trial.kind === "counted" && trial.of > 0 && <meter min={0} max={trial.of} value={trial.matched} aria-hidden="true" />}
      <span>{text}</span>
    </p>
  );
}

function countText(matched: number, of: number): string {
  if (of === 0) return "The queue has no messages yet to try this filter on.";
  if (of === 1) return matched ? "Would receive the queue's one message." : "Would not receive the queue's one message.";
  return `Would receive ${count(matched)} of the last ${count(of)} messages.`;
}
