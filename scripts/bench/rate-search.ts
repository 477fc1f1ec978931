/**
 * The search for the highest rate that passes, in a bounded number of steps. It starts at 0.85 of an estimate
 * (the end-to-end rate of a burst, which does the same work per message as a sustained run, with no latency
 * bound) and bisects between 0.4 and 1.3 of it: a pass raises the lower bound, a failure lowers the upper one.
 * Four steps end within about 6 % of the estimate. The figure is the highest rate that passed, never a bound
 * that was not run; when the highest pass is the last step below the upper bound, the true figure may be
 * higher, and `capped` says so.
 */
import type { Step } from "./throughput-runs.ts";

const START = 0.85;
const LOW = 0.4;
const HIGH = 1.3;

/** Three significant digits, so the rates read as chosen, not computed. */
export function roundRate(r: number): number {
  const unit = 10 ** Math.max(0, Math.floor(Math.log10(Math.max(1, r))) - 2);
  return Math.max(1, Math.round(r / unit) * unit);
}

export class RateSearch {
  readonly tried: Step[] = [];
  private lo: number;
  private hi: number;
  next: number | null;

  constructor(readonly estimate: number, private steps: number) {
    this.lo = LOW * estimate;
    this.hi = HIGH * estimate;
    this.next = steps > 0 && estimate > 0 ? roundRate(START * estimate) : null;
  }

  record(step: Step): void {
    this.tried.push(step);
    if (step.pass) this.lo = Math.max(this.lo, step.rate);
    else this.hi = Math.min(this.hi, step.rate);
    const next = roundRate((this.lo + this.hi) / 2);
    const repeat = this.tried.some((s) => s.rate === next);
    this.next = this.tried.length < this.steps && !repeat ? next : null;
  }

  get best(): Step | null {
    return this.tried.filter((s) => s.pass).sort((a, b) => b.rate - a.rate)[0] ?? null;
  }

  /** Whether nothing above the best pass was tried: the figure is then a floor. */
  get capped(): boolean {
    const best = this.best;
    return best !== null && !this.tried.some((s) => !s.pass && s.rate > best.rate);
  }
}
