/**
 * Paced publishing for the publish-to-received delay: messages are sent at a fixed rate (well below the
 * sustained rate, so the delay is the service's and not a queue's), and for each 200 the client-side time the
 * answer arrived is kept by message id. The receivers record when each delivery of that id arrives; the delay
 * is the difference, on the wall clock both processes share (payload.ts wallMs).
 */
import { wallMs } from "./payload.ts";

const MAX_IN_FLIGHT = 256; // if the service falls behind, the pace drops instead of piling up sockets

export type Paced = { accepted: Map<string, number>; failures: number; sent: number; seconds: number };

export async function publishPaced(url: string, key: string, body: string, perSecond: number, seconds: number): Promise<Paced> {
  const accepted = new Map<string, number>();
  let failures = 0;
  let sent = 0;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  const one = async () => {
    inFlight++;
    try {
      const res = await fetch(url, {
        method: "POST", body, tls: { rejectUnauthorized: false },
        headers: { "x-api-key": key, "content-type": "application/json" },
      });
      const at = wallMs(); // the 200 has arrived: its headers are in, the body is a few bytes behind
      const reply = (await res.json()) as { message?: { id?: string } };
      if (res.status === 200 && reply.message?.id) accepted.set(reply.message.id, at);
      else failures++;
    } catch {
      failures++; // counted; a failed publish simply has no delay to measure
    } finally {
      inFlight--;
    }
  };
  const started = performance.now();
  for (;;) {
    const elapsed = (performance.now() - started) / 1000;
    if (elapsed >= seconds) break;
    const due = Math.floor(elapsed * perSecond);
    while (sent < due && inFlight < MAX_IN_FLIGHT) {
      sent++;
      const p = one();
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    await Bun.sleep(2);
  }
  await Promise.all(pending);
  return { accepted, failures, sent, seconds: (performance.now() - started) / 1000 };
}

/** Delays in ms of every tracked arrival whose message was accepted in this run. */
export function delays(accepted: Map<string, number>, tracked: [string, number][]): number[] {
  const out: number[] = [];
  for (const [id, at] of tracked) {
    const sentAt = accepted.get(id);
    if (sentAt !== undefined) out.push(at - sentAt);
  }
  return out;
}
