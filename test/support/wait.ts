/**
 * Waiting in tests: for an event or an observable condition, never for a fixed time, which is too short on a busy
 * machine and wasted on an idle one. The deadline only ends a wait that would otherwise hang, with a message that
 * says what never happened; it makes no claim about speed (that is the bench's business).
 */

export type Check<T> = () => T | undefined | false | Promise<T | undefined | false>;

/** The pause between two looks grows from 1 ms to this: quick conditions are seen at once, slow ones cost little. */
const MAX_PAUSE_MS = 20;

/**
 * Waits for `what`: a promise (an event the code under test reports), or a check looked at again until it returns
 * a value (anything but undefined or false), which is returned. Fails with `why()` once `ms` have passed, or as
 * soon as `proc` (a child process the condition depends on) has exited.
 */
export async function waitFor<T>(what: Promise<T> | Check<T>, ms = 10_000, why: () => string = () => "condition not met",
  proc?: { exitCode: number | null }): Promise<T> {
  if (typeof what !== "function") return settledWithin(what, ms, why);
  const end = Date.now() + ms;
  for (let pause = 1; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    const value = await what();
    if (value !== undefined && value !== false) return value as T;
    if (proc && proc.exitCode !== null) throw new Error(`process exited (${proc.exitCode}): ${why()}`);
    if (Date.now() > end) throw new Error(`${why()} (waited ${ms} ms)`);
    await Bun.sleep(pause);
  }
}

async function settledWithin<T>(promise: Promise<T>, ms: number, why: () => string): Promise<T> {
  let timer: Timer | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${why()} (waited ${ms} ms)`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
