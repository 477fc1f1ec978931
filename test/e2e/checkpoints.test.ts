/**
 * The WAL stays bounded: no connection checkpoints inside its commits (a checkpoint would stall requests), so
 * the checkpoint thread's timer must fold the WAL back once it grows past its threshold (4 MiB), and cut it.
 * Both from source and from the compiled binary, where the thread is a separate entry point of the build: a
 * thread that cannot start falls back to the main thread and logs it, which this test also rules out.
 */
import { afterAll, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startFanout, waitFor, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const walBytes = (fanout: Fanout) => {
  try {
    return statSync(`${fanout.dbPath}-wal`).size;
  } catch {
    return 0; // not created yet
  }
};

test.each([["source", undefined], ["the compiled binary", join(ROOT, "dist/fanout")]])("from %s, publishing well past the checkpoint threshold leaves a WAL the checkpoint thread has folded back and cut to nothing", async (_, binary) => {
  const receiver = await Receiver.start();
  cleanups.push(() => receiver.close());
  const fanout = await startFanout({ env: { FANOUT_ALLOW_TARGETS: "127.0.0.1/32" }, binary });
  cleanups.push(() => fanout.stop());
  const api = deliveryApi(fanout);
  const queue = await api.queue("wal");
  await api.listener(queue, "l", receiver);
  const data = "x".repeat(4000); // a publish writes its data and some index pages: 2,000 of them are over 8 MiB of WAL
  let largest = 0;
  for (let batch = 0; batch < 20; batch++) {
    const replies = await Promise.all(Array.from({ length: 100 }, () => fanout.call("h2", "POST", `/v1/queues/${queue}/messages`, { body: { data } })));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    largest = Math.max(largest, walBytes(fanout));
  }
  await receiver.waitForDeliveries(2000, 30_000);
  await waitFor(() => walBytes(fanout) === 0 || undefined, 10_000, () => `the WAL is still ${walBytes(fanout)} bytes`);
  expect(largest).toBeGreaterThan(0);
  expect(largest).toBeLessThan(64 * 1024 * 1024);
  expect(fanout.output()).not.toContain("checkpoint");
});
