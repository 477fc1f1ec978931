/** Liveness end to end: probes, states, and deliveries held while a listener is down. */
import { expect, test } from "bun:test";
import { waitFor } from "./harness.ts";
import { VERSION } from "../../src/version.ts";
import { serverForFile, status } from "./receiver.ts";

// A held delivery becomes missed after the schedule's total, 1.5 s here: long enough to observe it held.
const ENV = { FANOUT_RETRY_SCHEDULE: "500ms,1s", FANOUT_LIVENESS_INTERVAL: "100ms", FANOUT_DELIVERY_TIMEOUT: "500ms" };

const { fanout, api, receiver } = serverForFile(ENV);

const livenessOf = async (queue: string, id: string) => (await api.listenerView(queue, id)).liveness;
const waitForState = (queue: string, id: string, state: string) =>
  waitFor(async () => {
    const l = await livenessOf(queue, id);
    return l.state === state && l;
  }, 10_000, () => `listener never became ${state}`);

test("a listener is probed with GET and becomes stable after a success", async () => {
  const r = await receiver();
  const queue = await api.queue();
  const l = await api.listener(queue, "probed", r);
  const stable = await waitForState(queue, l.id, "stable");
  expect(stable.success_count).toBeGreaterThanOrEqual(1);
  expect(stable.failure_count).toBe(0);
  expect(r.probes()[0]).toMatchObject({ method: "GET", headers: { "user-agent": `fanout/${VERSION}` } });
});

test("failing probes make a listener unstable, then down after three in a row", async () => {
  const r = await receiver();
  r.answer("/live", (_req, i) => new Response("no", { status: i % 2 ? 500 : 404 }));
  const queue = await api.queue();
  const l = await api.listener(queue, "sinking", r);
  const states = new Set<string>();
  await waitFor(async () => {
    const live = await livenessOf(queue, l.id);
    states.add(live.state);
    return live.state === "down";
  }, 15_000);
  expect(states.has("stable")).toBe(false);
  expect(states.has("unstable")).toBe(true);
  expect(r.deliveries()).toEqual([]);
  const live = await livenessOf(queue, l.id);
  expect(live.failure_count).toBeGreaterThanOrEqual(3);
  expect(live.success_count).toBe(0);
});

test("while its listener is down a message waits without using retries, and is delivered after recovery", async () => {
  const r = await receiver();
  r.answer("/live", status(503));
  const queue = await api.queue();
  const l = await api.listener(queue, "recovering", r);
  const down = await waitForState(queue, l.id, "down");
  const id = await api.publish(queue, { held: true });
  // Two more failed probes after the publish: the worker had every chance to send, and must not have.
  await waitFor(async () => (await livenessOf(queue, l.id)).failure_count >= down.failure_count + 2);
  expect(r.deliveries()).toEqual([]);
  const held = (await api.message(queue, id)).deliveries[0];
  expect(held).toMatchObject({ state: "pending", attempts: 0, next_attempt_at: null });
  r.answer("/live", () => new Response("ok"));
  const delivered = await api.settled(queue, id, l.id, "acknowledged");
  expect(delivered.attempts).toBe(1);
  expect(r.deliveries().map((x) => x.headers["webhook-id"])).toEqual([id]);
  expect((await livenessOf(queue, l.id)).state).toBe("stable");
});

test("a message held longer than the retry schedule's total is missed", async () => {
  const r = await receiver();
  r.answer("/live", status(503));
  const queue = await api.queue();
  const l = await api.listener(queue, "gone", r);
  await waitForState(queue, l.id, "down");
  const id = await api.publish(queue, "never");
  const missed = await api.settled(queue, id, l.id, "missed", 10_000);
  // Missed only once held for the schedule's total, by the server's own clock: its log line's time.
  const logged = await waitFor(() => fanout().output().split("\n").find((line) => line.includes("message missed") && line.includes(id)),
    10_000, () => "the miss was not logged");
  expect(Date.parse(logged.split(" ")[0]!) - (await api.message(queue, id)).created_at).toBeGreaterThanOrEqual(1_500);
  expect(missed).toMatchObject({ attempts: 0, last_error: "listener down for longer than the retry schedule" });
  expect(r.deliveries()).toEqual([]);
  expect((await api.listenerView(queue, l.id)).messages).toEqual({ acknowledged_count: 0, missed: [id], missed_count: 1 });
});
