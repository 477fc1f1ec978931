/** One message: its data, its delivery to each listener with redeliver, and the log of attempts. */
import { call, enc, get } from "../lib/api.ts";
import { plural } from "../lib/format.ts";
import { useAction, usePoll } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { DeliveryBadge, HttpStatus } from "../parts/badges.tsx";
import { Cell, Json, When } from "../parts/data.tsx";
import { Card, Id } from "../parts/layout.tsx";
import { Done, Empty, ErrorBox, Loading } from "../parts/notices.tsx";
import type { Queue } from "./queue.tsx";

type Ref = { id: string; name: string };
export type Delivery = { listener: Ref; state: string; attempts: number; cycle?: number; next_attempt_at: number | null; last_status: number | null; last_error: string | null };
export type Message = { id: string; name: string | null; data: unknown; created_at: number; deliveries: Delivery[] };
/** `cycle` counts the delivery's cycles: a redelivery or a replay starts a new one (absent on older servers). */
type Attempt = { listener: Ref; attempt: number; cycle?: number; attempted_at: number; status_code: number | null; duration_ms: number; error: string | null };

export function MessageView({ queue, messageId }: { queue: Queue; messageId: string }) {
  const path = `/v1/queues/${enc(queue.id)}/messages/${enc(messageId)}`;
  const polled = usePoll(async () => {
    const [message, attempts] = await Promise.all([
      get<{ message: Message }>(path).then((b) => b.message),
      call<{ attempts: Attempt[] }>("GET", `${path}/attempts?per_page=100`),
    ]);
    return { message, attempts: attempts.body.attempts, totalAttempts: attempts.total ?? attempts.body.attempts.length };
  }, [path]);
  const back = <p class="back"><Link to={`/queues/${queue.id}/messages`}>← All messages</Link></p>;

  if (!polled.data) {
    return <>{back}<ErrorBox error={polled.error} context="Could not load the message" />{!polled.error && <Loading what="the message" />}</>;
  }
  const { message: m, attempts, totalAttempts } = polled.data;
  return (
    <>
      {back}
      <ErrorBox error={polled.error} context="Could not refresh the message" />
      <Card title={m.name ?? "Unnamed message"} actions={<span class="muted small">created <When ms={m.created_at} /></span>}>
        <dl class="props"><dt>ID</dt><dd><Id value={m.id} /></dd></dl>
        <h3 class="subhead">Data</h3>
        <Json value={m.data} />
      </Card>
      <Deliveries message={m} path={path} onChange={polled.refresh} />
      <Attempts attempts={attempts} total={totalAttempts} />
    </>
  );
}

/** Redeliver starts a new cycle for the chosen deliveries (docs/delivery.md); earlier attempts stay in the log. */
function Deliveries({ message: m, path, onChange }: { message: Message; path: string; onChange: () => void }) {
  const redeliver = useAction();
  const send = (listeners?: string[]) =>
    void redeliver.run(async () => {
      const reply = await call<{ redelivered: number }>("POST", `${path}/redeliver`, listeners ? { body: { listeners } } : {});
      onChange();
      return `Redelivery started to ${plural(reply.body.redelivered, "listener")}.`;
    });
  const all = m.deliveries.length > 0 && (
    <button type="button" class="btn btn-small" disabled={redeliver.busy} onClick={() => send()}>Redeliver to all</button>
  );
  return (
    <Card title="Deliveries" actions={all}>
      <ErrorBox error={redeliver.error} context="Redelivery did not start" />
      <Done>{redeliver.done}</Done>
      {m.deliveries.length === 0 ? (
        <Empty title="This message went to no listener.">Only listeners that existed when a message was published receive it.</Empty>
      ) : (
        <table class="table table-stack">
          <thead><tr><th>Listener</th><th>State</th><th>Attempts</th><th>Last answer</th><th>Next attempt</th><th><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            {m.deliveries.map((d) => (
              <tr key={d.listener.id} data-listener={d.listener.name}>
                <td data-label="Listener" class="strong">{d.listener.name}</td>
                <td data-label="State"><DeliveryBadge state={d.state} /></td>
                <td data-label="Attempts">{d.attempts}<Cycle n={d.cycle} /></td>
                <Cell label="Last answer">{(d.last_status !== null || d.last_error) && <>{d.last_status !== null && <HttpStatus code={d.last_status} />}{d.last_error && <span class="error-text">{d.last_error}</span>}</>}</Cell>
                <Cell label="Next attempt">{d.next_attempt_at !== null && <When ms={d.next_attempt_at} />}</Cell>
                <td class="cell-actions"><button type="button" class="btn btn-small" disabled={redeliver.busy} onClick={() => send([d.listener.id])}>Redeliver</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

function Attempts({ attempts, total }: { attempts: Attempt[]; total: number }) {
  return (
    <Card title="Attempts" actions={<span class="muted small">{plural(total, "attempt")}, newest first</span>}>
      {attempts.length === 0 ? (
        <Empty title="No attempts yet.">The delivery worker sends a new message within moments; a listener that is down or paused holds it.</Empty>
      ) : (
        <table class="table table-stack attempts">
          <thead><tr><th>When</th><th>Listener</th><th>#</th><th>Answer</th><th>Took</th></tr></thead>
          <tbody>
            {attempts.map((a) => (
              <tr key={`${a.listener.id}-${a.cycle ?? 1}-${a.attempt}-${a.attempted_at}`}>
                <td data-label="When"><When ms={a.attempted_at} /></td>
                <td data-label="Listener">{a.listener.name}</td>
                <td data-label="Attempt">{a.attempt}<Cycle n={a.cycle} /></td>
                <td data-label="Answer"><HttpStatus code={a.status_code} />{a.error && <span class="error-text">{a.error}</span>}</td>
                <td data-label="Took">{a.duration_ms} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {total > attempts.length && <p class="muted small">Showing the newest {attempts.length} of {total} attempts.</p>}
    </Card>
  );
}

/** A delivery's later cycle (a redelivery or a replay started it); the first says nothing. */
function Cycle({ n }: { n: number | undefined }) {
  if (!n || n <= 1) return null;
  return <span class="muted" title="A redelivery or a replay starts a new cycle with a fresh retry schedule."> · cycle {n}</span>;
}
