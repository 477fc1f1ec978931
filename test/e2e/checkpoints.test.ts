/**
 * The WAL stays bounded: no connection checkpoints inside its commits (a checkpoint would stall requests), so
 * the API thread's checkpoint timer must fold the WAL back once it grows past its threshold (4 MiB), and cut it.
 */
import { afterAll, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { startFanout, waitFor, type Fanout } from "./harness.ts";
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

test("publishing well past the checkpoint threshold leaves a WAL the checkpoint timer has folded back and cut to nothing", async () => {
  const receiver = await Receiver.start();
  cleanups.push(() => receiver.close());
  const fanout = await startFanout({ env: { FANOUT_ALLOW_TARGETS: "127.0.0.1/32" } });
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
});
