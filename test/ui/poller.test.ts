/** When a dashboard view loads its data again (src/ui/client/lib/poller.ts). */
import { expect, test } from "bun:test";
import { Poller } from "../../src/ui/client/lib/poller.ts";

/** A poller whose loads wait until the test answers them; the timer is far off, so only `run` starts a load. */
function controlled(visible = () => true) {
  const pending: { resolve: (n: number) => void; reject: (e: Error) => void }[] = [];
  const got: number[] = [];
  const errors: unknown[] = [];
  let loads = 0;
  const poller = new Poller<number>({
    load: () => { loads++; return new Promise<number>((resolve, reject) => pending.push({ resolve, reject })); },
    every: 60_000, visible, onData: (n) => got.push(n), onError: (e) => errors.push(e),
  });
  const settle = async (answer: number | Error) => {
    const p = pending.shift()!;
    if (answer instanceof Error) p.reject(answer);
    else p.resolve(answer);
    await Bun.sleep(0);
  };
  return { poller, got, errors, settle, loads: () => loads };
}

test("a refresh asked for while a load is in flight loads again right after it, once", async () => {
  const c = controlled();
  void c.poller.run();
  expect(c.loads()).toBe(1);
  void c.poller.run(); // the change this refresh is for came after the load above started
  void c.poller.run();
  expect(c.loads()).toBe(1);
  await c.settle(1);
  expect(c.got).toEqual([1]);
  expect(c.loads()).toBe(2);
  await c.settle(2);
  expect(c.got).toEqual([1, 2]);
  expect(c.loads()).toBe(2);
  c.poller.stop();
});

test("a refresh with no load in flight loads at once; a stopped poller loads nothing and reports nothing", async () => {
  const c = controlled();
  void c.poller.run();
  await c.settle(1);
  void c.poller.run();
  expect(c.loads()).toBe(2);
  c.poller.stop();
  await c.settle(2);
  expect(c.got).toEqual([1]);
  void c.poller.run();
  expect(c.loads()).toBe(2);
});

test("a failed load is reported and the poller goes on; a hidden page starts no load", async () => {
  let shown = false;
  const c = controlled(() => shown);
  void c.poller.run();
  expect(c.loads()).toBe(0);
  shown = true;
  void c.poller.run();
  expect(c.loads()).toBe(1);
  await c.settle(new Error("offline"));
  expect(c.errors).toHaveLength(1);
  void c.poller.run();
  expect(c.loads()).toBe(2);
  c.poller.stop();
});
