import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockSignal } from "./lock-signal.ts";
import { waitFor } from "../../../test/support/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "fanout-signal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a waiter wakes when another thread gives the lock back, and not before", async () => {
  const signal = new LockSignal();
  // The other thread bumps the shared counter as the delivery worker does (LockSignal.released).
  const script = join(dir, "releaser.ts");
  writeFileSync(script, `self.onmessage = (e) => { const a = new Int32Array(e.data); Atomics.add(a, 0, 1); Atomics.notify(a, 0); };`);
  const thread = new Worker(script);
  try {
    let released = false;
    const wait = signal.releasedSince(signal.count, 60_000).then(() => (released = true));
    // A second waiter bounded at 20 ms ends by its time first: the first was not woken meanwhile.
    await waitFor(signal.releasedSince(signal.count, 20), 5_000, () => "the bounded wait never ended");
    expect(released).toBe(false);
    thread.postMessage(signal.buffer);
    await waitFor(wait, 5_000, () => "the release did not wake the waiter");
    expect(signal.count).toBe(1);
  } finally {
    thread.terminate();
  }
});

test("a release between reading the count and waiting is not missed", async () => {
  const signal = new LockSignal();
  const count = signal.count;
  signal.released();
  await waitFor(signal.releasedSince(count, 60_000), 5_000, () => "the wait missed the release");
});

test("without a release the wait ends after its time", async () => {
  const signal = new LockSignal();
  let ended = false;
  void signal.releasedSince(signal.count, 20).then(() => (ended = true));
  await waitFor(() => ended || undefined, 5_000, () => "the wait never ended");
  expect(signal.count).toBe(0);
});
