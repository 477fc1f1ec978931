/**
 * A store part whose every function tells `outage` of its storage errors (StorageUnavailable) on their way out, so
 * an unreachable server writes one log line however many requests fail on it; SQLite's store does this in its
 * write path (sqlite/conn.ts).
 */
import type { Outage } from "../outage.ts";

export function watchedError(e: unknown, outage: Outage): never {
  outage.absorb(e);
  throw e;
}

export function watched<T extends object>(part: T, outage: Outage): T {
  const out: Record<string, unknown> = {};
  const absorb = (e: unknown) => watchedError(e, outage);
  for (const [name, value] of Object.entries(part)) {
    if (typeof value !== "function") {
      out[name] = value;
      continue;
    }
    out[name] = (...args: unknown[]) => {
      try {
        const result = value.apply(part, args);
        return result instanceof Promise ? result.catch(absorb) : result;
      } catch (e) {
        return absorb(e);
      }
    };
  }
  return out as T;
}
