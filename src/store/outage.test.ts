import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { Outage } from "./outage.ts";
import { AppError, StorageUnavailable } from "../lib/errors.ts";
import { openDatabase } from "./sqlite/db.ts";
import { applyMigrations } from "./sqlite/migrations.ts";
import { deliveryStore } from "./sqlite/deliveries.ts";
import { waitFor } from "../../test/support/wait.ts";
import { tempFolder } from "../../test/support/temp.ts";

/** A database whose connection refuses writes while `query_only` is on: real SQLITE_READONLY errors. */
function database() {
  const db = openDatabase(join(tempFolder("fanout-outage-"), "db.db"), "normal");
  applyMigrations(db);
  return { db, store: deliveryStore(db), readOnly: (on: boolean) => db.run(`PRAGMA query_only = ${on ? 1 : 0}`) };
}

function outageOn(probe: () => Promise<void>) {
  const lines: string[] = [];
  let resumed = 0;
  const outage = new Outage({
    probe,
    everyMs: 20,
    report: { failed: (cause) => lines.push(`failed: ${cause}`), recovered: (cause) => lines.push(`recovered: ${cause}`) },
    onRecovered: () => resumed++,
  });
  return { outage, lines, resumed: () => resumed };
}

test("a storage error starts an outage reported once; a probe write that commits ends it, reported once", async () => {
  const { db, store, readOnly } = database();
  let probes = 0;
  const { outage, lines, resumed } = outageOn(() => (probes++, store.checkWritable(Date.now())));
  try {
    readOnly(true);
    for (let i = 0; i < 5; i++) {
      const error = await store.checkWritable(Date.now()).catch((e) => e);
      expect(error).toBeInstanceOf(StorageUnavailable);
      expect(outage.absorb(error)).toBe(true);
    }
    expect(outage.down).toBe(true);
    // The probe keeps failing meanwhile, and says nothing more.
    await waitFor(() => probes >= 3);
    expect(lines).toEqual(["failed: read-only"]);
    expect(resumed()).toBe(0);
    readOnly(false);
    await waitFor(() => !outage.down, 2000, () => "the outage never ended");
    expect(lines).toEqual(["failed: read-only", "recovered: read-only"]);
    expect(resumed()).toBe(1);
  } finally {
    outage.stop();
    db.close();
  }
});

test("only a storage error is absorbed; a probe that fails otherwise is tried again", async () => {
  let calls = 0;
  const { outage, lines } = outageOn(async () => {
    if (++calls < 3) throw new AppError(503, "The database stayed locked; try again.");
  });
  try {
    expect(outage.absorb(new Error("SQLITE_CORRUPT"))).toBe(false);
    expect(outage.absorb(new AppError(409, "taken"))).toBe(false);
    expect(outage.down).toBe(false);
    expect(outage.absorb(new StorageUnavailable("disk full", "SQLITE_FULL: database or disk is full"))).toBe(true);
    expect(outage.absorb(new StorageUnavailable("I/O error"))).toBe(true);
    await waitFor(() => !outage.down, 2000, () => "the outage never ended");
    expect(calls).toBe(3);
    expect(lines).toEqual(["failed: disk full", "failed: I/O error", "recovered: disk full", "recovered: I/O error"]);
  } finally {
    outage.stop();
  }
});

test("SQLite's errors that mean the database cannot be written reach callers as StorageUnavailable", async () => {
  const { db, store } = database();
  const path = db.filename;
  db.close();
  const reader = new Database(path, { readonly: true });
  try {
    const error = await deliveryStore(reader).checkWritable(Date.now()).catch((e) => e);
    expect(error).toBeInstanceOf(StorageUnavailable);
    expect(error).toMatchObject({ status: 503, reason: "read-only", headers: { "retry-after": "5" } });
    expect(error.underlying).toStartWith("SQLITE_READONLY");
    // Any other failure (here: a closed connection) stays what it was.
    await expect(store.checkWritable(Date.now())).rejects.not.toBeInstanceOf(StorageUnavailable);
  } finally {
    reader.close();
  }
});
