/** Option A: the listener units of work, once, over each backend's steps. */
import { step, type Step, type Unit } from "./steps.ts";
import { toListener, toSecrets } from "../../../src/store/rows.ts";
import type { Actor, Listener, ListenerInput, ListenerSecrets, Queue } from "../../../src/store/index.ts";

export type NewListener = {
  id: string; orgId: string; queueId: string; name: string; notifyUrl: string; livenessUrl: string; secret: string;
  livenessState: "pending"; nextProbeAt: number; createdAt: number; enabled: boolean;
};
export type ListenerChanges = Partial<Pick<NewListener, "name" | "notifyUrl" | "livenessUrl" | "enabled" | "nextProbeAt" | "secret">> &
  { previousSecret?: string | null; previousSecretUntil?: number | null };
export type StoredListener = Parameters<typeof toListener>[0] & {
  seq: number; secret: string; previousSecret: string | null; previousSecretUntil: number | null; missed: string[];
};
type Refs = { queue?: { id: string; name: string }; listener?: { id: string; name: string } };

export interface ListenerSteps {
  findQueue(orgId: string, queueId: string): Step<Queue>;
  find(orgId: string, queueId: string, id: string): Step<StoredListener>;
  insert(row: NewListener): Step<void>;
  update(id: string, set: ListenerChanges): Step<void>;
  remove(id: string): Step<void>;
  recordEvent(orgId: string, type: string, now: number, actor: Actor | null, refs: Refs): Step<void>;
}

const read = (r: StoredListener) => toListener(r, r.missed);

export function* create(s: ListenerSteps, orgId: string, queueId: string, input: ListenerInput & { secret: string }, now: number, actor: Actor): Unit<Listener> {
  const queue = yield* step(s.findQueue(orgId, queueId));
  const row: NewListener = {
    id: newIdOf(now), orgId, queueId, name: input.name, notifyUrl: input.notifyUrl, livenessUrl: input.livenessUrl,
    secret: input.secret, livenessState: "pending", nextProbeAt: now, createdAt: now, enabled: input.enabled ?? true,
  };
  yield* step(s.insert(row));
  const listener = read(yield* step(s.find(orgId, queueId, row.id)));
  yield* step(s.recordEvent(orgId, "listener_added", now, actor, { queue, listener: row }));
  return listener;
}

export function* update(s: ListenerSteps, orgId: string, queueId: string, id: string, patch: Partial<ListenerInput>, now: number, actor: Actor): Unit<Listener> {
  const queue = yield* step(s.findQueue(orgId, queueId));
  const before = yield* step(s.find(orgId, queueId, id));
  const set: ListenerChanges = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.notifyUrl !== undefined) set.notifyUrl = patch.notifyUrl;
  if (patch.livenessUrl !== undefined) set.livenessUrl = patch.livenessUrl;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  // Resumed: probe it now; the probe's success makes its held deliveries due (delivery/liveness.ts).
  if (patch.enabled === true && !before.enabled) set.nextProbeAt = now;
  if (Object.keys(set).length) yield* step(s.update(id, set));
  const listener = read(yield* step(s.find(orgId, queueId, id)));
  yield* step(s.recordEvent(orgId, "listener_updated", now, actor, { queue, listener }));
  return listener;
}

export function* remove(s: ListenerSteps, orgId: string, queueId: string, id: string, now: number, actor: Actor): Unit<void> {
  const queue = yield* step(s.findQueue(orgId, queueId));
  const listener = yield* step(s.find(orgId, queueId, id));
  yield* step(s.remove(id));
  yield* step(s.recordEvent(orgId, "listener_deleted", now, actor, { queue, listener }));
}

export function* rotateSecret(s: ListenerSteps, orgId: string, queueId: string, id: string, secret: string, previousUntil: number, now: number, actor?: Actor): Unit<ListenerSecrets> {
  const queue = yield* step(s.findQueue(orgId, queueId));
  const row = yield* step(s.find(orgId, queueId, id));
  yield* step(s.update(id, { secret, previousSecret: row.secret, previousSecretUntil: previousUntil }));
  const secrets = toSecrets(yield* step(s.find(orgId, queueId, id)), now);
  if (actor) yield* step(s.recordEvent(orgId, "listener_updated", now, actor, { queue, listener: row }));
  return secrets;
}

export function* get(s: ListenerSteps, orgId: string, queueId: string, id: string): Unit<Listener> {
  return read(yield* step(s.find(orgId, queueId, id)));
}

import { newId } from "../../../src/lib/ids.ts";
const newIdOf = (now: number) => newId("listener", now);
