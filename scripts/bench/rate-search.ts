/**
 * The search for the highest rate that passes, in a bounded number of steps. It starts at 0.85 of an estimate
 * (the end-to-end rate of a burst, which does the same work per message as a sustained run, with no latency
 * bound) and bisects between the best pass (at first 0.4 of the estimate, not run) and the lowest failure above
 * it (at first 1.3 of the estimate): four steps end within about 6 % of the estimate. A step that fell behind
 * also says how fast its deliveries kept up, which bounds it more tightly than its rate; before any pass, the
 * next step after such a failure is 0.9 of that pace. When no step has passed after the last, one more runs at
 * half the lowest rate tried, so that an estimate far too high still ends with a figure. The figure is the
 * highest rate that passed, never a bound that was not run; when no faster step failed, the true figure may be
 * higher, and `capped` says so.
 */
import type { Step } from "./throughput-runs.ts";

const START = 0.85;
const LOW = 0.4;
const HIGH = 1.3;
const BELOW_PACE = 0.9;
const FELL_BEHIND = 0.95; // deliveries kept up with less than this share of the rate

/** Three significant digits, so the rates read as chosen, not computed. */
export function roundRate(r: number): number {
  const unit = 10 ** Math.max(0, Math.floor(Math.log10(Math.max(1, r))) - 2);
  return Math.max(1, Math.round(r / unit) * unit);
}

const bound = (s: Step) => Math.min(s.rate, s.keptUp);
const fellBehind = (s: Step) => s.keptUp < FELL_BEHIND * s.rate;

export class RateSearch {
  readonly tried: Step[] = [];
  next: number | null;

  constructor(readonly estimate: number, private steps: number) {
    this.next = steps > 0 && estimate > 0 ? roundRate(START * estimate) : null;
  }

  record(step: Step): void {
    this.tried.push(step);
    const rate = roundRate(this.following());
    if (this.tried.length < this.steps) this.next = this.tried.some((s) => s.rate === rate) ? null : rate;
    else if (this.tried.length === this.steps && !this.best) this.next = roundRate(Math.min(...this.tried.map((s) => s.rate)) / 2);
    else this.next = null;
  }

  private following(): number {
    const best = this.best?.rate;
    const above = this.tried.filter((s) => !s.pass && (best === undefined || s.rate > best));
    const hi = Math.min(HIGH * this.estimate, ...above.map(bound));
    if (best !== undefined) return (best + hi) / 2;
    const tightest = above.find((s) => bound(s) === hi);
    return tightest && fellBehind(tightest) ? BELOW_PACE * hi : (Math.min(LOW * this.estimate, hi / 2) + hi) / 2;
  }

  get best(): Step | null {
    return this.tried.filter((s) => s.pass).sort((a, b) => b.rate - a.rate)[0] ?? null;
  }

  /** Whether no step faster than the best pass failed: the figure is then a floor. */
  get capped(): boolean {
    const best = this.best;
    return best !== null && !this.tried.some((s) => !s.pass && s.rate > best.rate);
  }
}
