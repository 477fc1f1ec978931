/** States in words and colour: every badge says its state in text, the colour only repeats it. */
import type { ComponentChildren } from "preact";

export type Tone = "ok" | "warn" | "bad" | "info" | "muted";

export function Badge({ tone, children, title }: { tone: Tone; children: ComponentChildren; title?: string }) {
  return <span class={`badge badge-${tone}`} title={title}>{children}</span>;
}

const LIVENESS: Record<string, [Tone, string, string]> = {
  stable: ["ok", "Stable", "The last liveness probe succeeded."],
  unstable: ["warn", "Unstable", "One or two liveness probes in a row failed."],
  down: ["bad", "Down", "Three or more probes in a row failed; deliveries wait until a probe succeeds."],
  pending: ["muted", "Pending", "Not probed yet."],
};

export function LivenessBadge({ state }: { state: string }) {
  const [tone, label, title] = LIVENESS[state] ?? ["muted", state, ""];
  return <Badge tone={tone} title={title}>{label}</Badge>;
}

const DELIVERY: Record<string, [Tone, string]> = {
  acknowledged: ["ok", "Acknowledged"],
  pending: ["info", "Pending"],
  sending: ["info", "Sending"],
  missed: ["bad", "Missed"],
};

export function DeliveryBadge({ state }: { state: string }) {
  const [tone, label] = DELIVERY[state] ?? ["muted", state];
  return <Badge tone={tone}>{label}</Badge>;
}

export function PausedBadge() {
  return <Badge tone="warn" title="Deliveries are held until the listener is resumed.">Paused</Badge>;
}

export function HttpStatus({ code }: { code: number | null }) {
  if (code === null) return <span class="muted">—</span>;
  const tone: Tone = code >= 200 && code < 300 ? "ok" : code >= 500 ? "bad" : "warn";
  return <Badge tone={tone}>{code}</Badge>;
}
