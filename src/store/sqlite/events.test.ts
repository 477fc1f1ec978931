import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "./index.ts";
import type { Actor, EventQuery } from "../index.ts";
import { tempFolder } from "../../../test/support/temp.ts";

const actor: Actor = { keyId: "key_caller", keyName: "caller" };
const T0 = 1_700_000_000_000;
const all: EventQuery = { prefix: null, after: null, limit: 1000, since: 0 };
const stores: SqliteStore[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function twoConnections(): [SqliteStore, SqliteStore] {
  const dir = tempFolder("fanout-events-");
  dirs.push(dir);
  const a = openSqliteStore(join(dir, "f.db"), { durability: "normal" });
  const b = openSqliteStore(join(dir, "f.db"), { durability: "normal", migrate: false });
  stores.push(a, b);
  return [a, b];
}

test("the remembered newest event key does not outlive its transaction: another connection's events come between", async () => {
  const [a, b] = twoConnections();
  const org = (await a.orgs.create("com.example.a", T0)).id;
  // All within one millisecond (T0 + 5, the first event's), so order rests on the per-millisecond sequence.
  const first = await a.queues.create(org, { name: "a1", schema: null, schemaId: null }, T0 + 5, actor);
  const b1 = await b.queues.create(org, { name: "b1", schema: null, schemaId: null }, T0, actor);
  const b2 = await b.queues.create(org, { name: "b2", schema: null, schemaId: null }, T0, actor);
  const last = await a.queues.create(org, { name: "a2", schema: null, schemaId: null }, T0, actor);
  const order = (await a.events.list(org, all)).map((e) => e.queue?.id);
  expect(order).toEqual([first.id, b1.id, b2.id, last.id]);
});

test("writes batched into one transaction get growing keys, and a refused one leaves no gap in the order", async () => {
  const [a] = twoConnections();
  const org = (await a.orgs.create("com.example.a", T0)).id;
  const q = await a.queues.create(org, { name: "q", schema: null, schemaId: null }, T0, actor);
  // Issued together, so the group commit runs them in one transaction; the duplicate name is rolled back alone.
  const writes = [
    a.messages.publish(org, q.id, { name: "m1", data: "1" }, T0, actor),
    a.queues.create(org, { name: "q", schema: null, schemaId: null }, T0, actor),
    a.messages.publish(org, q.id, { name: "m2", data: "2" }, T0, actor),
    a.messages.publish(org, q.id, { name: "m3", data: "3" }, T0, actor),
  ];
  const settled = await Promise.allSettled(writes);
  expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
  const events = await a.events.list(org, all);
  expect(events.map((e) => e.message?.name ?? e.type)).toEqual(["queue_added", "m1", "m2", "m3"]);
  const keys = events.map((e) => [e.storedAt, e.id] as const);
  const sorted = [...keys].sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1));
  expect(keys).toEqual(sorted);
  expect(new Set(keys.map((k) => k[1])).size).toBe(4);
});
