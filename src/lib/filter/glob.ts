/**
 * Name patterns: `*` matches any run of characters (dots included, possibly none), every other character only
 * itself, case-sensitive. Matched without a regular expression: the pattern is split at its stars, the first
 * piece must start the name and the last end it, and the pieces between are found left to right, each as early
 * as possible after the one before. Taking the earliest place never loses a match, since a later piece may
 * start anywhere after it; and each search starts where the last one ended, so the work is linear in
 * pattern + name.
 */
import { compileNeedle, indexOfNeedle, type Meter, type Needle } from "./text-search.ts";

export type Glob = { source: string; test(name: string, meter?: Meter): boolean };

export function compileGlob(source: string): Glob {
  const pieces = source.split("*");
  if (pieces.length === 1) {
    return {
      source,
      test: (name, meter) => {
        if (meter !== undefined) meter.steps += Math.min(name.length, source.length) + 1;
        return name === source;
      },
    };
  }
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  const middle: Needle[] = pieces.slice(1, -1).filter((piece) => piece !== "").map(compileNeedle);
  const anchored = first.length + last.length;
  return {
    source,
    test: (name, meter) => {
      if (meter !== undefined) meter.steps += anchored + 1;
      if (name.length < anchored || !name.startsWith(first) || !name.endsWith(last)) return false;
      const end = name.length - last.length;
      let at = first.length;
      for (const piece of middle) {
        const found = indexOfNeedle(name, piece, at, end, meter);
        if (found === -1) return false;
        at = found + piece.text.length;
      }
      return true;
    },
  };
}
