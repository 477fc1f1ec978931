import type { FieldError } from "../errors.ts";

/** What one filter may hold; the figures are part of the API (docs/api.md). */
export const FILTER_LIMITS = {
  /** Bytes of the filter serialized as compact JSON (UTF-8). */
  bytes: 8 * 1024,
  /** Name patterns, keys of condition objects and operators, together (see docs/decisions.md). */
  nodes: 200,
  /** Objects and arrays inside one another in `data`, `data` itself being level 1. */
  depth: 8,
  segments: 10,
  names: 50,
  nameCharacters: 200,
  inValues: 100,
} as const;

/** A refusal lists every problem, up to this many: enough to fix a filter, bounded whatever was sent. */
export const MAX_FILTER_ERRORS = 20;

/** The state of one compile: the problems found so far and the nodes counted. */
export class FilterProblems {
  readonly errors: FieldError[] = [];
  private nodes = 0;

  add(path: string, message: string): void {
    if (this.errors.length < MAX_FILTER_ERRORS) this.errors.push({ path, message });
  }

  /** Counts one node at `path`; the first past the limit is the one named. */
  count(path: string): void {
    if (++this.nodes === FILTER_LIMITS.nodes + 1) {
      this.add(path, `takes the filter past ${FILTER_LIMITS.nodes} conditions (name patterns, keys and operators count one each)`);
    }
  }

  /** True (and the problem noted) when an object or array at `path` sits deeper than the limit. */
  tooDeep(path: string, depth: number): boolean {
    if (depth <= FILTER_LIMITS.depth) return false;
    this.add(path, `nests deeper than ${FILTER_LIMITS.depth} levels of objects and arrays (counting data itself as 1)`);
    return true;
  }
}
