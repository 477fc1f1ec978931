/**
 * Sign-in: the key is tried against GET /v1/queues before it is kept. A 403 without Retry-After is a valid key
 * that may not read queues (its views say so); a 403 with it is the lockout after failed attempts.
 */
import { useState } from "preact/hooks";
import { call, ApiError } from "../lib/api.ts";
import { useAction } from "../lib/poll.ts";
import { session } from "../lib/session.ts";
import { Field, value } from "../parts/fields.tsx";
import { ErrorBox } from "../parts/notices.tsx";
import { Logo } from "../parts/layout.tsx";

export function SignIn() {
  const [key, setKey] = useState("");
  const action = useAction();
  const ended = session.endedBecause();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const candidate = key.trim();
      if (!candidate) throw new ApiError(0, "Enter an API key", "Paste the key into the field above.");
      try {
        await call("GET", "/v1/queues?per_page=1", { key: candidate });
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 403 && error.retryAfter === undefined)) throw error;
      }
      session.signIn(candidate);
      return null;
    });
  };

  return (
    <main class="signin">
      <form class="card signin-card" onSubmit={submit}>
        <div class="signin-brand"><Logo />fanout</div>
        <h1>Sign in with an API key</h1>
        <p class="muted">
          The dashboard calls this server's <code>/v1</code> API with your key. The key stays in this browser tab only
          and is forgotten when the tab closes.
        </p>
        {ended && <div class="notice notice-warn" role="status">You were signed out: {ended}</div>}
        <Field label="API key" hint="The owner key was printed when fanout first started (or is FANOUT_BOOTSTRAP_KEY).">
          <input name="api-key" type="password" autocomplete="off" spellcheck={false} value={key} onInput={(e) => setKey(value(e))} autofocus />
        </Field>
        <ErrorBox error={action.error} context="Sign-in failed" />
        <button type="submit" class="btn btn-primary btn-block" disabled={action.busy}>{action.busy ? "Checking…" : "Sign in"}</button>
      </form>
    </main>
  );
}
