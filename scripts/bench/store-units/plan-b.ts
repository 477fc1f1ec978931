/** Option B: the decisions both backends make for listeners, as plain functions. */
import { newId } from "../../../src/lib/ids.ts";
import type { ListenerInput } from "../../../src/store/index.ts";

export const newListener = (orgId: string, queueId: string, input: ListenerInput & { secret: string }, now: number) => ({
  id: newId("listener", now), orgId, queueId, name: input.name, notifyUrl: input.notifyUrl, livenessUrl: input.livenessUrl,
  secret: input.secret, livenessState: "pending" as const, nextProbeAt: now, createdAt: now, enabled: input.enabled ?? true,
});

export type ListenerChanges = { name?: string; notifyUrl?: string; livenessUrl?: string; enabled?: boolean; nextProbeAt?: number };

/** What an update sets (null: nothing). */
export function listenerChanges(before: { enabled: boolean }, patch: Partial<ListenerInput>, now: number): ListenerChanges | null {
  const set: ListenerChanges = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.notifyUrl !== undefined) set.notifyUrl = patch.notifyUrl;
  if (patch.livenessUrl !== undefined) set.livenessUrl = patch.livenessUrl;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  // Resumed: probe it now; the probe's success makes its held deliveries due (delivery/liveness.ts).
  if (patch.enabled === true && !before.enabled) set.nextProbeAt = now;
  return Object.keys(set).length ? set : null;
}
