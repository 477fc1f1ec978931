import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { openSqliteStore, type SqliteStore } from "../store/sqlite/index.ts";
import { manualClock } from "../lib/clock.ts";
import type { Logger } from "../lib/log.ts";
import { READY_FOR_MS, readinessCheck } from "./readiness.ts";

let store: SqliteStore;
const logged: string[] = [];
const log: Logger = { info: () => {}, warn: () => {}, error: (msg) => void logged.push(msg) };

beforeEach(() => {
  store = openSqliteStore(":memory:", { durability: "normal" });
  logged.length = 0;
});
afterEach(() => store.close());

/** The readiness row's value: the `now` of the last check that wrote. */
function lastWrite(): number | undefined {
  const reader = new Database(store.path, { readonly: true });
  try {
    return reader.query<{ checked_at: number }, []>("SELECT checked_at FROM readiness WHERE id = 1").get()?.checked_at;
  } finally {
    reader.close();
  }
}

test("readiness is learnt by one write, shared by every request within a second", async () => {
  const clock = manualClock();
  const ready = readinessCheck({ store, clock, log });
  const t0 = clock.now();
  const answers = await Promise.all(Array.from({ length: 50 }, () => ready()));
  expect(answers.every((a) => a.ready)).toBe(true);
  expect(lastWrite()).toBe(t0);
  clock.advance(READY_FOR_MS - 1);
  expect(await ready()).toEqual({ ready: true });
  expect(lastWrite()).toBe(t0);
  clock.advance(1);
  expect(await ready()).toEqual({ ready: true });
  expect(lastWrite()).toBe(t0 + READY_FOR_MS);
});

test("a write that fails for another reason than storage answers not ready too, in one sentence, and is logged", async () => {
  const ready = readinessCheck({ store, clock: manualClock(), log });
  const other = new Database(store.path);
  other.run("DROP TABLE readiness"); // the write fails with "no such table", an error the store does not map
  other.close();
  expect(await ready()).toEqual({ ready: false, detail: "The database did not accept a write." });
  expect(logged).toEqual(["readiness check failed"]);
});
