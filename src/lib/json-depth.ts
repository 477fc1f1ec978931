/**
 * How deep a JSON text nests, found in one pass over the text before anything parses it. JSON.parse, TypeBox's
 * checks and our own walks all recurse per level: a 40 KB body of 20,000 nested arrays cost seconds of CPU and
 * gigabytes of memory in them, while this scan costs the same as for any other 40 KB.
 */

/** Request bodies nest at most this deep (docs/security.md); a queue schema's own limit applies inside `data`. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** True when `text` opens more than `max` arrays or objects inside one another. Strings are skipped whole. */
export function nestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  // Most texts open fewer brackets in all than the limit, and counting them is a few native searches.
  if (opensAtMost(text, "{", max) + opensAtMost(text, "[", max) <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(text, i);
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** How often `bracket` occurs in `text`, counting no further than `max` + 1. */
function opensAtMost(text: string, bracket: string, max: number): number {
  let n = 0;
  for (let at = text.indexOf(bracket); at !== -1 && n <= max; at = text.indexOf(bracket, at + 1)) n++;
  return n;
}

/** The index of the quote that closes the string opened at `open` (the text's end when it never closes). */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return text.length;
}
