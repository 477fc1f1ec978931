/**
 * The cost of the generator machinery alone (units-a.ts, steps.ts): a listener update over steps that return at
 * once, run as a generator and written as a plain function, sync (SQLite's shape) and async (PostgreSQL's).
 */
import * as units from "./units-a.ts";
import { runNow, runAwaiting } from "./steps.ts";
import { toListener } from "../../../src/store/rows.ts";
const row = { id: "l1", orgId: "o", queueId: "q", name: "n", notifyUrl: "u", livenessUrl: "u", enabled: true, createdAt: 1, livenessState: "pending" as const,
  successCount: 0, failureCount: 0, acknowledgedCount: 0, missedCount: 0, seq: 1, secret: "s", previousSecret: null, previousSecretUntil: null, missed: [] };
const queue = { id: "q", orgId: "o", name: "q", schema: null, schemaId: null, createdAt: 1 };
let sink = 0;
const sync: units.ListenerSteps = { findQueue: () => queue, find: () => row, insert: () => { sink++; }, update: () => { sink++; }, remove: () => { sink++; }, recordEvent: () => { sink++; } };
const asyncSteps: units.ListenerSteps = { findQueue: async () => queue, find: async () => row, insert: async () => { sink++; }, update: async () => { sink++; }, remove: async () => { sink++; }, recordEvent: async () => { sink++; } };
const actor = { keyId: "k", keyName: "k" };
function plainUpdate(s: any, orgId: string, queueId: string, id: string, patch: any, now: number) {
  const queue = s.findQueue(orgId, queueId);
  const before = s.find(orgId, queueId, id);
  const set: any = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.notifyUrl !== undefined) set.notifyUrl = patch.notifyUrl;
  if (patch.livenessUrl !== undefined) set.livenessUrl = patch.livenessUrl;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  if (patch.enabled === true && !before.enabled) set.nextProbeAt = now;
  if (Object.keys(set).length) s.update(id, set);
  const r = s.find(orgId, queueId, id);
  const listener = toListener(r, r.missed);
  s.recordEvent(orgId, "listener_updated", now, actor, { queue, listener });
  return listener;
}
async function plainUpdateAsync(s: any, orgId: string, queueId: string, id: string, patch: any, now: number) {
  const queue = await s.findQueue(orgId, queueId);
  const before = await s.find(orgId, queueId, id);
  const set: any = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.notifyUrl !== undefined) set.notifyUrl = patch.notifyUrl;
  if (patch.livenessUrl !== undefined) set.livenessUrl = patch.livenessUrl;
  if (patch.enabled !== undefined) set.enabled = patch.enabled;
  if (patch.enabled === true && !before.enabled) set.nextProbeAt = now;
  if (Object.keys(set).length) await s.update(id, set);
  const r = await s.find(orgId, queueId, id);
  const listener = toListener(r, r.missed);
  await s.recordEvent(orgId, "listener_updated", now, actor, { queue, listener });
  return listener;
}
const M = 1_000_000;
for (let rep = 0; rep < 3; rep++) {
  let t = performance.now();
  for (let i = 0; i < M; i++) plainUpdate(sync, "o", "q", "l1", { name: "x", enabled: true }, i);
  const plain = (performance.now() - t) * 1e6 / M;
  t = performance.now();
  for (let i = 0; i < M; i++) runNow(units.update(sync, "o", "q", "l1", { name: "x", enabled: true }, i, actor));
  const gen = (performance.now() - t) * 1e6 / M;
  t = performance.now();
  for (let i = 0; i < M / 10; i++) await plainUpdateAsync(asyncSteps, "o", "q", "l1", { name: "x", enabled: true }, i);
  const aplain = (performance.now() - t) * 1e6 / (M / 10);
  t = performance.now();
  for (let i = 0; i < M / 10; i++) await runAwaiting(units.update(asyncSteps, "o", "q", "l1", { name: "x", enabled: true }, i, actor));
  const agen = (performance.now() - t) * 1e6 / (M / 10);
  console.log(`sync: plain ${plain.toFixed(0)} ns, generator ${gen.toFixed(0)} ns (+${(gen - plain).toFixed(0)}); async: plain ${aplain.toFixed(0)} ns, generator ${agen.toFixed(0)} ns (+${(agen - aplain).toFixed(0)})`);
}
