import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./db.ts";
import { walBytes } from "./checkpoints.ts";
import { startCheckpointThread } from "./checkpointer.ts";
import { LockSignal } from "./lock-signal.ts";
import { openSqliteStore } from "./index.ts";
import { waitFor } from "../../../test/support/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function filled(name: string) {
  const path = join(dir, name);
  const db = openDatabase(path, "normal");
  db.run("CREATE TABLE t (x TEXT)");
  for (let i = 0; i < 50; i++) db.run("INSERT INTO t VALUES (?)", ["x".repeat(4000)]);
  expect(walBytes(path)).toBeGreaterThan(100_000);
  return { path, db };
}

/** A database with a WAL to cut and a checkpoint thread on it; `reports` collects what it logs. */
function started(name: string) {
  const { path, db } = filled(name);
  const reports: string[] = [];
  const signal = new LockSignal();
  const report = { failed: (cause: string) => reports.push(`failed: ${cause}`), recovered: (cause: string) => reports.push(`recovered: ${cause}`) };
  const handle = startCheckpointThread(db, path, "normal", false, signal, report, (msg) => reports.push(msg));
  return { path, db, reports, signal, handle };
}

test("the thread checkpoints the file from its own connection, and stops when asked", async () => {
  const { path, db, reports, signal, handle } = started("thread.db");
  const ended = new Promise((resolve) => handle.thread.addEventListener("close", resolve));
  try {
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
    expect((db.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(50);
    // Nothing fell back to this connection: the thread did the work, and said when it gave back the write lock.
    expect(reports).toEqual([]);
    expect(signal.count).toBeGreaterThan(0);
  } finally {
    await handle.stop();
    db.close();
  }
  // Stopped: the thread, and its timer with it, has ended, and no checkpoints took over on this thread (the
  // fallback says so in a line as it starts, when the thread ends).
  await waitFor(ended, 5000, () => "the thread did not end");
  expect(reports).toEqual([]);
});

test("a thread that ends is replaced by checkpoints on the caller's connection, and that is logged", async () => {
  const { path, db, reports, handle } = started("fallback.db");
  try {
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
    handle.thread.terminate();
    await waitFor(() => reports.length > 0, 5000, () => "the end of the thread was not reported");
    expect(reports[0]).toBe("the checkpoint thread ended; checkpointing on the main thread instead");
    for (let i = 0; i < 50; i++) db.run("INSERT INTO t VALUES (?)", ["y".repeat(4000)]);
    expect(walBytes(path)).toBeGreaterThan(100_000);
    await waitFor(() => walBytes(path) === 0, 5000, () => `the WAL is still ${walBytes(path)} bytes`);
  } finally {
    await handle.stop();
    db.close();
  }
});

test("the thread reads the store's gauges from its own connection; once it is gone, asking is refused", async () => {
  const path = join(dir, "gauges.db");
  const store = openSqliteStore(path, { durability: "normal" });
  const actor = { keyId: "k", keyName: "k" };
  const org = (await store.orgs.create("com.example.g", 1)).id;
  const queue = (await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor)).id;
  await store.listeners.create(org, queue, { name: "l", notifyUrl: "http://127.0.0.1/n", livenessUrl: "http://127.0.0.1/l", secret: "whsec_x" }, 1, actor);
  const db = openDatabase(path, "normal");
  const handle = startCheckpointThread(db, path, "normal", false, new LockSignal(), { failed() {}, recovered() {} }, () => {});
  try {
    const gauges = await handle.gauges(Date.now());
    expect(gauges).toMatchObject({ deliveries: [], listeners: [{ orgId: org, state: "pending", count: 1 }], oldestDueAt: null });
    // The same figures; the file's size only roughly, since either connection's checkpoints may cut the WAL meanwhile.
    const here = await store.gauges(Date.now());
    expect({ ...gauges, databaseBytes: 0 }).toEqual({ ...here, databaseBytes: 0 });
    expect(gauges.databaseBytes).toBeGreaterThanOrEqual(statSync(path).size);
    handle.thread.terminate();
    await waitFor(async () => (await handle.gauges(Date.now()).then(() => false, (e: Error) => e.message)) || undefined, 5000);
    await expect(handle.gauges(Date.now())).rejects.toThrow("the checkpoint thread is gone");
  } finally {
    await handle.stop();
    db.close();
    await store.close();
  }
});
