// The planner hands the pairs its filters took to SQL as integers (message seq past the cursor times a factor
// above every listener seq, plus the listener seq): a slice must stop where that could lose precision.
import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { tempFolder } from "../../../test/support/temp.ts";
import { openSqliteStore, type SqliteStore } from "./index.ts";
import type { ClaimRequest } from "../deliveries.ts";

const actor = { keyId: "key_test", keyName: "test" };
const request: ClaimRequest = { owner: "w1", leaseMs: 10_000, limit: 1_000, perListener: 1_000, busy: new Map() };
let store: SqliteStore | undefined;
afterEach(() => store?.close());

test("pairs stay exact when listener seqs are near 2^53 divided by a slice's span", async () => {
  const now = 1_700_000_000_000;
  store = openSqliteStore(join(tempFolder("fanout-pairs-"), "store.db"), { durability: "normal" });
  const org = (await store.orgs.create("com.example.pairs", now)).id;
  const queue = await store.queues.create(org, { name: "orders", schema: null, schemaId: null }, now, actor);
  const raw = new Database(store.path);
  // The next listener's seq: 2^50, so a pair's factor allows 7 messages past the cursor.
  raw.run("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('listeners', ?)", [2 ** 50 - 1]);
  const listener = (name: string, filter: object | null) => store!.listeners.create(org, queue.id,
    { name, notifyUrl: `http://127.0.0.1/${name}`, livenessUrl: `http://127.0.0.1/${name}/live`, secret: "s", filter }, now, actor);
  const even = await listener("even", { data: { even: true } });
  const odd = await listener("odd", { data: { even: false } });
  expect(raw.query("SELECT max(seq) AS seq FROM listeners").get()).toEqual({ seq: 2 ** 50 + 1 });
  raw.close();
  const published: { id: string; even: boolean }[] = [];
  for (let i = 0; i < 40; i++) {
    const m = await store.messages.publish(org, queue.id, { name: "n", data: JSON.stringify({ even: i % 2 === 0 }) }, now, actor);
    published.push({ id: m.id, even: i % 2 === 0 });
  }
  const got: string[] = [];
  for (let step = 0; step < 100 && got.length < published.length; step++) {
    const { claimed } = await store.deliveries.claimDue(request, now);
    for (const c of claimed) got.push(`${c.message.id} ${c.listener.id}`);
  }
  expect(got.sort()).toEqual(published.map((m) => `${m.id} ${m.even ? even.id : odd.id}`).sort());
});
