/**
 * Replay to one listener (docs/delivery.md): messages created in [since, until) whose delivery to it is final start
 * a new cycle; by default only the missed ones, or the acknowledged ones too.
 */
import { useState } from "preact/hooks";
import { call, ApiError } from "../lib/api.ts";
import { plural, toLocalInput } from "../lib/format.ts";
import { useAction } from "../lib/poll.ts";
import { Field, value } from "../parts/fields.tsx";
import { Done, ErrorBox } from "../parts/notices.tsx";

export function ReplayForm({ path, listener, onDone, onClose }: { path: string; listener: string; onDone: () => void; onClose: () => void }) {
  const [since, setSince] = useState(() => toLocalInput(Date.now() - 3600_000));
  const [until, setUntil] = useState("");
  const [only, setOnly] = useState<"missed" | "all">("missed");
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const from = new Date(since).getTime();
      if (!Number.isFinite(from)) throw new ApiError(0, "Choose when the replay starts");
      const body: Record<string, unknown> = { since: from, only };
      if (until) body.until = new Date(until).getTime();
      const reply = await call<{ replayed: number }>("POST", path, { body });
      onDone();
      if (reply.body.replayed === 0) {
        return `Nothing to replay: no ${only === "missed" ? "missed" : "missed or acknowledged"} message to ${listener} was created in that window.`;
      }
      return `Replay started: ${plural(reply.body.replayed, "message")} will be delivered again.`;
    });
  };
  return (
    <form class="form replay" onSubmit={submit}>
      <h4 class="replay-title">Deliver messages to {listener} again</h4>
      <div class="form-grid">
        <Field label="Messages created from">
          <input name="replay-since" type="datetime-local" step={1} required value={since} onInput={(e) => setSince(value(e))} />
        </Field>
        <Field label="Until (optional)" hint="Empty: up to now.">
          <input name="replay-until" type="datetime-local" step={1} value={until} onInput={(e) => setUntil(value(e))} />
        </Field>
      </div>
      <fieldset class="choice">
        <legend>Which messages</legend>
        <label><input type="radio" name="replay-only" checked={only === "missed"} onChange={() => setOnly("missed")} /> Only missed ones</label>
        <label><input type="radio" name="replay-only" checked={only === "all"} onChange={() => setOnly("all")} /> Missed and acknowledged</label>
      </fieldset>
      <ErrorBox error={action.error} context="The replay did not start" />
      <Done>{action.done}</Done>
      <div class="form-actions">
        <button type="submit" class="btn btn-primary btn-small" disabled={action.busy}>Replay</button>
        <button type="button" class="btn btn-small btn-ghost" onClick={onClose}>Close</button>
      </div>
    </form>
  );
}
