/**
 * A listener's pace and order (docs/api.md, "Listeners"): a rate limit, a concurrency and FIFO or unordered
 * delivery, saved together with one PUT. Only what is not a whole number is refused here; the bounds and the
 * combinations are the API's to judge, and its error is shown as sent.
 */
import { useState } from "preact/hooks";
import { ApiError } from "../lib/api.ts";
import { useAction } from "../lib/poll.ts";
import { Field, value } from "../parts/fields.tsx";
import { Done, ErrorBox } from "../parts/notices.tsx";
import type { Listener } from "./listener-card.tsx";
import { limitsOf, type Ordering } from "./listener-pace.tsx";

type Pace = { rate_limit: number | null; concurrency: number | null; ordering: Ordering };
type Draft = { rate: string; concurrency: string; ordering: Ordering };

const draftOf = (p: Pace): Draft => ({ rate: p.rate_limit?.toString() ?? "", concurrency: p.concurrency?.toString() ?? "", ordering: p.ordering });

function whole(text: string, what: string): number | null {
  const t = text.trim();
  if (t === "") return null;
  if (!/^\d+$/.test(t)) throw new ApiError(0, `Check the ${what}`, `A whole number, or empty for ${what === "rate limit" ? "none" : "the server's default"}.`);
  return Number(t);
}

const paceOf = (d: Draft): Pace => ({ rate_limit: whole(d.rate, "rate limit"), concurrency: whole(d.concurrency, "concurrency"), ordering: d.ordering });

/** "at most 20/s, 2 at a time, FIFO" or "no limits of its own, unordered". */
function summary(p: Pace): string {
  const limits = limitsOf(p);
  return `${limits.length > 0 ? limits.join(", ") : "no limits of its own"}, ${p.ordering === "fifo" ? "FIFO" : "unordered"}`;
}

type Props = { listener: Listener; save: (body: Pace) => Promise<void>; readOnly: boolean };

export function PaceForm({ listener: l, save, readOnly }: Props) {
  const [saved, setSaved] = useState<Pace>(() => ({ rate_limit: l.rate_limit ?? null, concurrency: l.concurrency ?? null, ordering: l.ordering ?? "unordered" }));
  const [draft, setDraft] = useState(() => draftOf(saved));
  const action = useAction();
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const dirty = (() => {
    try {
      return JSON.stringify(paceOf(draft)) !== JSON.stringify(saved);
    } catch {
      return true; // a value the form refuses is a change not saved yet
    }
  })();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = paceOf(draft);
      await save(body);
      setSaved(body);
      setDraft(draftOf(body));
      return `Saved: ${summary(body)}. It applies to deliveries not yet started.`;
    });
  };

  return (
    <form class="form settings-section" onSubmit={submit}>
      <h5>Pace and order</h5>
      <div class="pace-fields">
        <Field label="Rate limit, per second" hint="Deliveries started per second at most. Empty: no limit.">
          <input name="rate-limit" inputMode="numeric" autocomplete="off" placeholder="none" value={draft.rate} onInput={(e) => set({ rate: value(e) })} />
        </Field>
        <Field label="Concurrency" hint="Requests in flight at most. Empty: the server's default.">
          <input name="concurrency" inputMode="numeric" autocomplete="off" placeholder="server default" value={draft.concurrency} onInput={(e) => set({ concurrency: value(e) })} />
        </Field>
      </div>
      <fieldset class="choice">
        <legend>Order</legend>
        <label><input type="radio" name="ordering" value="unordered" checked={draft.ordering === "unordered"} onChange={() => set({ ordering: "unordered" })} /> Unordered: several at a time, in any order</label>
        <label><input type="radio" name="ordering" value="fifo" checked={draft.ordering === "fifo"} onChange={() => set({ ordering: "fifo" })} /> FIFO: one at a time, in publish order</label>
      </fieldset>
      <p class="muted small">
        FIFO sends the next message only once the one before is acknowledged or missed, so a failing one holds all
        behind it through its whole retry schedule (head-of-line blocking): pause the listener while its receiver is
        broken, and redeliver or replay what it missed.
      </p>
      <ErrorBox error={action.error} context="Pace and order were not saved" />
      <Done>{action.done}</Done>
      {!readOnly && (
        <div class="form-actions form-actions-wrap">
          <button type="submit" class="btn btn-primary btn-small" disabled={action.busy || !dirty}>Save pace and order</button>
          {dirty && <span class="muted small unsaved">Not saved yet</span>}
        </div>
      )}
    </form>
  );
}
