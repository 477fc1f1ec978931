import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockSignal } from "./lock-signal.ts";
import { waitFor } from "../../../test/support/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-signal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Settles to "released" or, if the wait is still on after `ms`, "waiting". */
const stateAfter = (wait: Promise<void>, ms: number) =>
  Promise.race([wait.then(() => "released"), Bun.sleep(ms).then(() => "waiting")]);

test("a waiter wakes when another thread gives the lock back, and not before", async () => {
  const signal = new LockSignal();
  // The other thread bumps the shared counter as the delivery worker does (LockSignal.released).
  const script = join(dir, "releaser.ts");
  writeFileSync(script, `self.onmessage = (e) => { const a = new Int32Array(e.data); Atomics.add(a, 0, 1); Atomics.notify(a, 0); };`);
  const thread = new Worker(script);
  try {
    const wait = signal.releasedSince(signal.count, 60_000);
    expect(await stateAfter(wait, 100)).toBe("waiting");
    thread.postMessage(signal.buffer);
    expect(await stateAfter(wait, 5_000)).toBe("released");
    expect(signal.count).toBe(1);
  } finally {
    thread.terminate();
  }
});

test("a release between reading the count and waiting is not missed", async () => {
  const signal = new LockSignal();
  const count = signal.count;
  signal.released();
  expect(await stateAfter(signal.releasedSince(count, 60_000), 5_000)).toBe("released");
});

test("without a release the wait ends after its time", async () => {
  const signal = new LockSignal();
  let ended = false;
  void signal.releasedSince(signal.count, 20).then(() => (ended = true));
  await waitFor(() => ended || undefined, 5_000, () => "the wait never ended");
  expect(signal.count).toBe(0);
});
