import { expect, test } from "bun:test";
import { waitFor } from "./wait.ts";

test("a check is looked at until it returns a value, which is returned", async () => {
  let looks = 0;
  expect(await waitFor(() => ++looks >= 3 && `after ${looks}`)).toBe("after 3");
  expect(await waitFor(async () => 0)).toBe(0); // zero is a value; only undefined and false mean "not yet"
});

test("a check that never holds fails with its reason once the deadline has passed", async () => {
  await expect(waitFor(() => false, 30, () => "the door never opened")).rejects.toThrow("the door never opened (waited 30 ms)");
});

test("a check fails at once when the process it depends on has exited", async () => {
  await expect(waitFor(() => undefined, 60_000, () => "no line", { exitCode: 2 })).rejects.toThrow("process exited (2): no line");
});

test("a promise is awaited; one that does not settle fails with the reason", async () => {
  expect(await waitFor(Promise.resolve("done"))).toBe("done");
  await expect(waitFor(Promise.reject(new Error("broke")))).rejects.toThrow("broke");
  await expect(waitFor(new Promise(() => {}), 30, () => "nothing came")).rejects.toThrow("nothing came (waited 30 ms)");
});
