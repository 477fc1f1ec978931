/**
 * The bench's handle on the receivers process (receivers.ts): start it, reset and read its counters, and wait
 * for deliveries with a stall bound, so a delivery worker that delivers nothing (or stops half way) ends the
 * wait as "not delivered" or "partial" instead of hanging the run.
 */
import { join } from "node:path";
import { BUN, spawnChild, type Child } from "./procs.ts";

export type ReceiverStats = { count: number; perPort: number[]; first: number | null; last: number | null; at10: number | null; at90: number | null };
export type Timing = { count: number; p50: number | null; p99: number | null; max: number | null };
export type Arrivals = ReceiverStats & { expected: number; complete: boolean; stalled: boolean; rate: number | null };

export class Receivers {
  private constructor(readonly child: Child, readonly ports: number[], private control: number) {}

  static async start(count: number, ttlMs: number): Promise<Receivers> {
    const child = spawnChild([BUN, join(import.meta.dir, "receivers.ts"), "--ports", String(count), "--ttl", String(ttlMs)], { ttlMs });
    const line = await child.waitForLine(/receivers (\{.*\})\n/, 15_000);
    const { ports, control } = JSON.parse(line[1]!);
    return new Receivers(child, ports, control);
  }

  url(index: number, path = "/hook"): string {
    return `http://127.0.0.1:${this.ports[index]}${path}`;
  }

  private async call(path: string, method = "GET"): Promise<any> {
    const res = await fetch(`http://127.0.0.1:${this.control}${path}`, { method });
    if (!res.ok) throw new Error(`receivers ${path}: ${res.status}`);
    return res.json();
  }

  reset = () => this.call("/reset", "POST");
  track = (on: boolean) => this.call(`/track?on=${on ? 1 : 0}`, "POST");
  tracked = (): Promise<[string, number][]> => this.call("/tracked");
  stats = (): Promise<ReceiverStats> => this.call("/stats");
  /** Delays from the publish time a timed message carries (payload.ts timedBody) to its arrival, in ms. */
  time = (on: boolean) => this.call(`/timing?on=${on ? 1 : 0}`, "POST");
  timing = (): Promise<Timing> => this.call("/timing");

  /** Until `expected` arrivals, or no new arrival for `stallMs` (from the call if none came yet). The rate is
   * taken between the 10th and 90th percentile arrivals, leaving out ramp-up and the tail. */
  async waitFor(expected: number, stallMs: number): Promise<Arrivals> {
    let last = -1;
    let changedAt = performance.now();
    for (;;) {
      const s = await this.stats();
      if (s.count !== last) {
        last = s.count;
        changedAt = performance.now();
      }
      const complete = s.count >= expected;
      const stalled = !complete && performance.now() - changedAt > stallMs;
      if (complete || stalled) return { ...s, expected, complete, stalled, rate: sustainedRate(s) };
      await Bun.sleep(50);
    }
  }

  stop = () => this.child.stop(2000);
}

export function sustainedRate(s: ReceiverStats): number | null {
  if (s.count < 20 || s.at10 === null || s.at90 === null || s.at90 <= s.at10) return null;
  const between = Math.floor(0.9 * s.count) - Math.floor(0.1 * s.count);
  return between / ((s.at90 - s.at10) / 1000);
}
