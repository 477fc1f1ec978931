/**
 * A unit of work written once for both backends, as a generator: it yields only what must be awaited, so SQLite
 * runs it to the end at once inside its transaction callback (which cannot await), and PostgreSQL awaits each step.
 */
export type Step<T> = T | Promise<T>;
export type Unit<T> = Generator<PromiseLike<unknown>, T, unknown>;

const isThenable = (x: unknown): x is PromiseLike<unknown> => typeof (x as { then?: unknown } | null)?.then === "function";

/** `yield* step(x)`: the value of `x`, awaited when it is a promise. */
export function* step<T>(x: Step<T>): Generator<PromiseLike<unknown>, T, unknown> {
  return isThenable(x) ? ((yield x) as T) : x;
}

/** Runs `unit` without awaiting (SQLite): a step that yields is a bug, a statement built and never run. */
export function runNow<T>(unit: Unit<T>): T {
  const r = unit.next();
  if (!r.done) throw new Error("a synchronous unit of work yielded a promise");
  return r.value;
}

/** Runs `unit`, awaiting each step it yields (PostgreSQL); a rejection is thrown back into it. */
export async function runAwaiting<T>(unit: Unit<T>): Promise<T> {
  let r = unit.next();
  while (!r.done) {
    let value: unknown;
    try {
      value = await r.value;
    } catch (e) {
      r = unit.throw(e);
      continue;
    }
    r = unit.next(value);
  }
  return r.value;
}
