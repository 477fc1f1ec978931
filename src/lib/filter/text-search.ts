/**
 * Substring search in time linear in text + needle (Knuth-Morris-Pratt), for the filter's name wildcards and
 * `$contains`. The engine's own indexOf may compare naively, needle length × text length in the worst case, and
 * a filter's author controls both the needle and (through the queue) the text.
 */

/** Counts the work a match does, so tests can bound it without timing anything. */
export type Meter = { steps: number };

export type Needle = { text: string; fallback: Int32Array };

export function compileNeedle(text: string): Needle {
  const fallback = new Int32Array(text.length);
  let k = 0;
  for (let i = 1; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== text.charCodeAt(k)) k = fallback[k - 1]!;
    if (text.charCodeAt(i) === text.charCodeAt(k)) k++;
    fallback[i] = k;
  }
  return { text, fallback };
}

/** Where `needle` first lies wholly inside text[from, end), or -1. */
export function indexOfNeedle(haystack: string, needle: Needle, from: number, end: number, meter?: Meter): number {
  const pattern = needle.text;
  const m = pattern.length;
  if (m === 0) return from <= end ? from : -1;
  const fallback = needle.fallback;
  let k = 0;
  let steps = 0;
  for (let i = from; i < end; i++) {
    const c = haystack.charCodeAt(i);
    while (k > 0 && c !== pattern.charCodeAt(k)) {
      k = fallback[k - 1]!;
      steps++;
    }
    steps++;
    if (c === pattern.charCodeAt(k) && ++k === m) {
      if (meter !== undefined) meter.steps += steps;
      return i - m + 1;
    }
  }
  if (meter !== undefined) meter.steps += steps;
  return -1;
}
