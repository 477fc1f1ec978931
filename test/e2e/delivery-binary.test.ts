/**
 * The compiled executable delivers: its worker thread is a second entry point inside the binary, found by a
 * path that differs from the source tree's (delivery/supervisor.ts, workerEntry).
 */
import { afterAll, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import { ROOT, startFanout, tempDir, type Fanout } from "./harness.ts";
import { deliveryApi, Receiver } from "./receiver.ts";

let fanout: Fanout | undefined;
let receiver: Receiver | undefined;
afterAll(async () => {
  receiver?.close();
  await fanout?.stop();
});

test("the binary, alone in an empty folder, delivers a message", async () => {
  // Always rebuilt: a binary left over from before a change to the worker's location would test nothing.
  await $`${process.execPath} ${join(ROOT, "scripts/build.ts")}`.cwd(ROOT).quiet();
  const binary = join(tempDir("fanout-bin-"), "fanout");
  copyFileSync(join(ROOT, "dist/fanout"), binary);
  receiver = await Receiver.start();
  fanout = await startFanout({ binary });
  const api = deliveryApi(fanout);
  const queue = await api.queue();
  const listener = await api.listener(queue, "binary", receiver);
  const id = await api.publish(queue, { from: "binary" });
  await api.settled(queue, id, listener.id, "acknowledged");
  expect(receiver.deliveries().map((r) => r.headers["webhook-id"])).toEqual([id]);
  expect(fanout.output()).not.toContain("delivery worker");
  expect(await fanout.stop()).toBe(0);
}, 60_000);
