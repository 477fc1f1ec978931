// The drain loop against a real SQLite store and a fake `send` that the test answers by hand.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { DeliveryLoop, type LoopOptions } from "./loop.ts";
import { makeTargetPolicy, type SendRequest, type SendResult } from "./egress.ts";
import type { Prober } from "./liveness.ts";
import { SocketPool } from "./http1/client.ts";
import { openDatabase } from "../store/sqlite/db.ts";
import { deliveryStore } from "../store/sqlite/deliveries.ts";
import { StorageUnavailable } from "../lib/errors.ts";
import { manualClock } from "../lib/clock.ts";
import { tempFolder } from "../../test/support/temp.ts";
import { waitFor } from "../../test/support/wait.ts";

const actor = { keyId: "k", keyName: "k" };
/** A request as the fake receiver saw it: its body as text. */
type Pending = { request: SendRequest & { body: string }; answer: (status: number | null) => void };

let store: SqliteStore;
let org: string;
let queue: string;
let inFlight: Pending[];
let peak: { total: number; byUrl: Map<string, number> };
const loops: DeliveryLoop[] = [];

function fakeSend(request: SendRequest): Promise<SendResult> {
  return new Promise((resolve) => {
    const body = typeof request.body === "string" ? request.body : Buffer.from(request.body).toString("utf8");
    const entry: Pending = {
      request: { ...request, body },
      answer: (status) => {
        inFlight.splice(inFlight.indexOf(entry), 1);
        resolve(status === null ? { status: null, durationMs: 1, error: "boom", kind: "failed" as const } : { status, durationMs: 1, retryAfter: null, bodySnippet: "" });
      },
    };
    inFlight.push(entry);
    peak.total = Math.max(peak.total, inFlight.length);
    const same = inFlight.filter((p) => p.request.url === request.url).length;
    peak.byUrl.set(request.url, Math.max(peak.byUrl.get(request.url) ?? 0, same));
  });
}

const idleProber = { tick: async () => {}, stop: () => {} } as unknown as Prober;

/** A loop over the test's store; `now` is its clock and its attempts' (a manual one lets the test say when). */
function loop(over: Partial<LoopOptions> = {}, now: () => number = Date.now): DeliveryLoop {
  const l = new DeliveryLoop({
    store: store.deliveries, owner: "test", now, deliveryTimeoutMs: 1000, retryScheduleMs: [50], globalCap: 5, listenerCap: 2,
    attempt: { send: fakeSend, now, version: "t", scheduleMs: [50], random: () => 0.5, request: { policy: makeTargetPolicy([]), timeoutMs: 1000, pool: new SocketPool() } },
    prober: idleProber, fail: (e) => { throw e; }, pollMs: 60_000, ...over,
  });
  loops.push(l);
  return l;
}

/** Lets queued callbacks (a result's write is queued with setImmediate) run, to show they changed nothing. */
const settle = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
const listener = (name: string) =>
  store.listeners.create(org, queue, { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: "http://127.0.0.1/l", secret: "whsec_AAAA" }, Date.now(), actor);
const publish = () => store.messages.publish(org, queue, { name: null, data: "1" }, Date.now(), actor);
const states = async (id: string) => (await store.messages.deliveries(org, queue, id)).map((d) => d.state);

beforeEach(async () => {
  store = openSqliteStore(join(tempFolder("fanout-loop-"), "db.db"), { durability: "normal" });
  org = (await store.orgs.create("com.example.loop", 1)).id;
  queue = (await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor)).id;
  inFlight = [];
  peak = { total: 0, byUrl: new Map() };
});
afterEach(async () => {
  for (const l of loops.splice(0)) await l.stop(0);
  await store.close();
});

test("requests in flight never exceed the global cap nor a listener's cap", async () => {
  for (const name of ["a", "b", "c", "d"]) await listener(name);
  for (let i = 0; i < 10; i++) await publish();
  loop().start();
  let answered = 0;
  while (answered < 40) {
    await waitFor(() => inFlight.length > 0);
    inFlight[0]!.answer(200);
    answered++;
  }
  expect(peak.total).toBe(5);
  expect(Math.max(...peak.byUrl.values())).toBe(2);
  const counts = async () => (await store.listeners.list(org, { visible: "all" }, { offset: 0, limit: 10 })).items.map((l) => l.messages.acknowledgedCount);
  await waitFor(async () => (await counts()).every((n) => n === 10));
});

test("a failed attempt is retried when due, without waiting for the poll", async () => {
  await listener("a");
  const m = await publish();
  const clock = manualClock(Date.now());
  const failedAt = clock.now();
  loop({}, clock.now).start();
  await waitFor(() => inFlight.length === 1);
  inFlight[0]!.answer(null);
  // The step that wrote the failure also claimed, 50 ms before the retry is due by the loop's clock: nothing.
  await waitFor(async () => (await store.messages.deliveries(org, queue, m.id))[0]?.nextAttemptAt === failedAt + 50);
  await settle();
  expect(inFlight).toHaveLength(0);
  clock.advance(50);
  await waitFor(() => inFlight.length === 1, 10_000, () => "the retry waited for the poll (60 s)");
  inFlight[0]!.answer(200);
  await waitFor(async () => (await states(m.id))[0] === "acknowledged");
  const attempts = await store.messages.attempts(org, queue, m.id);
  expect(attempts.map((a) => [a.error, a.attemptedAt])).toEqual([[null, failedAt + 50], ["boom", failedAt]]);
});

test("stop lets sends in flight finish and writes their results", async () => {
  await listener("a");
  const m = await publish();
  const l = loop();
  l.start();
  await waitFor(() => inFlight.length === 1);
  const stopped = l.stop(2000);
  await settle(); // a stop that did not wait would have written and given back the row by now
  inFlight[0]!.answer(200);
  await stopped;
  expect(await states(m.id)).toEqual(["acknowledged"]);
});

test("stop gives back sends that outlast the drain time, due at once, and drops their late results", async () => {
  await listener("a");
  const m = await publish();
  const l = loop();
  l.start();
  await waitFor(() => inFlight.length === 1);
  await l.stop(20);
  const [d] = await store.messages.deliveries(org, queue, m.id);
  expect(d).toMatchObject({ state: "pending", attempts: 0 });
  expect(d!.nextAttemptAt).toBeLessThanOrEqual(Date.now());
  inFlight[0]!.answer(200);
  await settle();
  expect(await states(m.id)).toEqual(["pending"]);
});

test("a listener's next row is sent the moment one of its requests ends, while steps wait for the write lock", async () => {
  await listener("a");
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await publish()).id);
  loop().start();
  // The first step claims twice the listener's cap: two sent, two ready.
  await waitFor(() => inFlight.length === 2);
  const blocker = new Database(store.path);
  blocker.run("PRAGMA busy_timeout = 0");
  blocker.run("BEGIN IMMEDIATE"); // no step can commit now: results and claims wait
  try {
    const first = inFlight[0]!.request.body;
    inFlight[0]!.answer(200);
    await waitFor(() => inFlight.length === 2, 10_000, () => "the ready row waited for a step, which waits for the lock");
    expect(inFlight.map((p) => p.request.body)).not.toContain(first);
  } finally {
    blocker.run("ROLLBACK");
    blocker.close();
  }
  for (let answered = 0; answered < 3; answered++) {
    await waitFor(() => inFlight.length > 0);
    inFlight[0]!.answer(200);
  }
  await waitFor(async () => (await Promise.all(ids.map(states))).every((s) => s[0] === "acknowledged"));
  expect(peak.byUrl.get("http://127.0.0.1/a")).toBe(2);
});

test("stop gives back the rows ready but not sent, due at once", async () => {
  await listener("a");
  const sent = await publish();
  const ready = await publish();
  const l = loop({ listenerCap: 1 });
  l.start();
  await waitFor(() => inFlight.length === 1);
  expect(await states(ready.id)).toEqual(["sending"]); // claimed, waiting for the listener's one slot
  await l.stop(20);
  for (const m of [sent, ready]) {
    const [d] = await store.messages.deliveries(org, queue, m.id);
    expect(d).toMatchObject({ state: "pending", attempts: 0 });
    expect(d!.nextAttemptAt).toBeLessThanOrEqual(Date.now());
  }
  expect(inFlight.length).toBe(1); // the ready row was never sent
});

test("results of sends refilled from the ready list wait for the batch; a slot left empty steps at once", async () => {
  await listener("a");
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await publish()).id);
  loop({ listenerCap: 1, batchMs: 60_000 }).start();
  // One claim: one row sent, three ready (READY_PER_CAP).
  await waitFor(() => inFlight.length === 1);
  for (let i = 0; i < 3; i++) {
    const body = inFlight[0]!.request.body;
    inFlight[0]!.answer(200);
    await waitFor(() => inFlight.length === 1 && inFlight[0]!.request.body !== body);
  }
  await settle();
  // Three results gathered, none written: each slot went on sending from the ready list.
  expect(await Promise.all(ids.map(states))).toEqual([["sending"], ["sending"], ["sending"], ["sending"]]);
  // The last ready row's end leaves the slot empty: a step at once writes all four, well before the batch time.
  inFlight[0]!.answer(200);
  await waitFor(async () => (await Promise.all(ids.map(states))).every((s) => s[0] === "acknowledged"));
});

test("a nudge steps at once when nothing is in flight, and joins the next batch otherwise", async () => {
  await listener("a");
  const first = await publish();
  const l = loop({ batchMs: 60_000 });
  l.start();
  await waitFor(() => inFlight.length === 1);
  const second = await publish();
  l.nudge();
  await settle(); // a step at once (wake) would have claimed the second message within these turns
  expect(inFlight.length).toBe(1); // the listener has a free slot, but the second message waits for the batch
  expect(await states(second.id)).toEqual(["pending"]);
  inFlight[0]!.answer(200); // the slot is left empty: a step at once settles the first and claims the second
  await waitFor(() => inFlight.length === 1 && inFlight[0]!.request.body.includes(second.id));
  inFlight[0]!.answer(200);
  await waitFor(async () => (await states(first.id))[0] === "acknowledged" && (await states(second.id))[0] === "acknowledged");
  const third = await publish();
  l.nudge(); // nothing in flight: at once
  await waitFor(() => inFlight.length === 1 && inFlight[0]!.request.body.includes(third.id));
});

test("the housekeeping (lease rescue) runs only while the worker leads it", async () => {
  await listener("a");
  const m = await publish();
  // Another worker leased the row and died: its lease expires at once.
  await store.deliveries.claimDue({ owner: "dead", leaseMs: 1, limit: 10, perListener: 10, busy: new Map() }, Date.now());
  let leading = false;
  let asked = 0;
  const l = loop({ pollMs: 10, lead: async () => (asked++, leading) });
  l.start();
  await waitFor(() => asked >= 5); // five polls that did not lead, so did not rescue it
  expect(await states(m.id)).toEqual(["sending"]);
  expect(inFlight).toHaveLength(0);
  leading = true;
  await waitFor(() => inFlight.length === 1);
  inFlight[0]!.answer(200);
  await waitFor(async () => (await states(m.id))[0] === "acknowledged");
});

test("while the database cannot be written, results wait in memory and nothing is claimed; resumed, they are settled", async () => {
  await listener("a");
  const first = await publish();
  // The worker's own connection, refusing writes while query_only is on (SQLITE_READONLY: a storage error).
  const db = openDatabase(store.path, "normal");
  let paused = false;
  const refused: unknown[] = [];
  const l = loop({
    store: deliveryStore(db),
    paused: () => paused,
    fail: (e) => {
      if (!(e instanceof StorageUnavailable)) throw e;
      paused = true;
      refused.push(e);
    },
  });
  try {
    l.start();
    await waitFor(() => inFlight.length === 1);
    db.run("PRAGMA query_only = 1");
    inFlight[0]!.answer(200);
    await waitFor(() => refused.length === 1);
    const second = await publish();
    l.nudge();
    await settle();
    // The answer is not written, and nothing more is claimed while paused.
    expect(inFlight.length).toBe(0);
    expect(await states(first.id)).toEqual(["sending"]);
    expect(await states(second.id)).toEqual(["pending"]);
    db.run("PRAGMA query_only = 0");
    paused = false;
    l.resume();
    await waitFor(async () => (await states(first.id))[0] === "acknowledged");
    await waitFor(() => inFlight.length === 1 && inFlight[0]!.request.body.includes(second.id));
    expect(refused.length).toBe(1);
    expect((await store.messages.attempts(org, queue, first.id)).map((a) => a.statusCode)).toEqual([200]);
  } finally {
    loops.splice(loops.indexOf(l), 1);
    await l.stop(0);
    db.close();
  }
});
