/**
 * What the portal adds under each listener card: its recent deliveries with their attempts, and, when the session
 * may manage, a test message, the signing secret (reveal, rotate) and its name, URLs and pace (the card's own
 * settings hold its filter and headers).
 */
import { useState } from "preact/hooks";
import { call, enc } from "../lib/api.ts";
import { dateTime } from "../lib/format.ts";
import { useAction } from "../lib/poll.ts";
import { Done, ErrorBox } from "../parts/notices.tsx";
import type { Listener } from "../views/listener-card.tsx";
import type { Queue } from "../views/queue.tsx";
import { RecentDeliveries } from "./deliveries.tsx";
import { EditForm } from "./edit-form.tsx";

export type PortalListener = Listener & {
  rate_limit?: number | null;
  concurrency?: number | null;
  ordering?: "unordered" | "fifo";
};

type PanelProps = { queue: Queue; listener: PortalListener; manage: boolean; onChange: () => void };
type Open = "secret" | "edit" | null;

export function ListenerPanels({ queue, listener: l, manage, onChange }: PanelProps) {
  const path = `/v1/queues/${enc(queue.id)}/listeners/${enc(l.id)}`;
  const [open, setOpen] = useState<Open>(null);
  const [sent, setSent] = useState(0);
  const test = useAction();
  const toggle = (panel: Open) => setOpen(open === panel ? null : panel);
  const sendTest = () =>
    void test.run(async () => {
      await call("POST", `${path}/test`);
      setSent(sent + 1);
      return "Test message sent: it shows below under Recent deliveries, with each attempt.";
    });
  return (
    <div class="portal-panels">
      {manage && (
        <div class="actions portal-actions">
          <button type="button" class="btn btn-small btn-primary" disabled={test.busy} onClick={sendTest}>Send a test message</button>
          <button type="button" class="btn btn-small" aria-expanded={open === "secret"} onClick={() => toggle("secret")}>Signing secret</button>
          <button type="button" class="btn btn-small" aria-expanded={open === "edit"} onClick={() => toggle("edit")}>Edit…</button>
        </div>
      )}
      <ErrorBox error={test.error} context="The test message was not sent" />
      <Done>{test.done}</Done>
      {open === "secret" && <SecretPanel path={`${path}/secret`} onClose={() => setOpen(null)} />}
      {open === "edit" && <EditForm path={path} listener={l} onSaved={onChange} onClose={() => setOpen(null)} />}
      <RecentDeliveries queue={queue} listener={l} manage={manage} refresh={sent} onListenerChange={onChange} />
    </div>
  );
}

type Secrets = { secret: string; previous_secret?: string; previous_secret_expires_at?: number };

/** The secret signs every delivery (Standard Webhooks); a rotation keeps the old one signing for a day beside it. */
function SecretPanel({ path, onClose }: { path: string; onClose: () => void }) {
  const [secrets, setSecrets] = useState<Secrets | null>(null);
  const action = useAction();
  const reveal = () => void action.run(async () => (setSecrets((await call<Secrets>("GET", path)).body), null));
  const rotate = () => {
    if (!confirm("Rotate the signing secret? The current one keeps signing beside the new one for 24 hours.")) return;
    void action.run(async () => {
      setSecrets((await call<Secrets>("POST", `${path}/rotate`)).body);
      return "Rotated: deliveries are signed with both secrets until the old one expires. Update your endpoint now.";
    });
  };
  return (
    <section class="portal-section secret-panel" aria-label="Signing secret">
      <h4 class="portal-section-title">Signing secret</h4>
      <p class="muted small">Every delivery carries a signature made with this secret (Standard Webhooks headers); check it on your side.</p>
      {secrets && (
        <>
          <code class="secret" data-secret="current">{secrets.secret}</code>
          {secrets.previous_secret && (
            <p class="small">
              The previous secret signs too until {dateTime(secrets.previous_secret_expires_at!)}:
              <code class="secret" data-secret="previous">{secrets.previous_secret}</code>
            </p>
          )}
        </>
      )}
      <ErrorBox error={action.error} context="The secret could not be read" />
      <Done>{action.done}</Done>
      <div class="actions">
        {!secrets && <button type="button" class="btn btn-small" disabled={action.busy} onClick={reveal}>Reveal</button>}
        <button type="button" class="btn btn-small" disabled={action.busy} onClick={rotate}>Rotate…</button>
        <button type="button" class="btn btn-small btn-ghost" onClick={onClose}>Close</button>
      </div>
    </section>
  );
}
