/**
 * Listener filters: which of a queue's messages a listener receives. A filter has two optional parts, and a
 * message must satisfy each one given: `names`, patterns on the message name (`*` is any run of characters),
 * and `data`, conditions on the payload (dot paths, operators, `$and`/`$or`/`$not`). docs/api.md states the
 * rules for users; docs/decisions.md the choices the contract left open.
 *
 * A filter is checked and compiled once, when it is saved (compileFilter); each published message is parsed once
 * (filterSubject) and matched against every listener's compiled filter (matches), without regular expressions
 * and in time linear in the filter.
 */
import { evaluate } from "./filter/evaluate.ts";
import type { CompiledFilter } from "./filter/compile.ts";
import type { Meter } from "./filter/text-search.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";

export { canonicalFilter, compileFilter, type CompiledFilter, type FilterCompilation, type FilterSpec } from "./filter/compile.ts";
export { FILTER_LIMITS, MAX_FILTER_ERRORS } from "./filter/limits.ts";
export type { Meter } from "./filter/text-search.ts";

/** What a filter sees of a message: its name (null when it has none) and its parsed data. */
export type FilterSubject = { readonly name: string | null; readonly data: unknown };

/**
 * The subject of a stored message, whose `data` is JSON text. A string holding JSON is matched parsed, as a
 * queue's schema checks it; a string that holds no JSON (or JSON nested deeper than a request may be) is matched
 * as the string it is. Throws only if `dataText` itself is not JSON, which the store never holds.
 */
export function filterSubject(name: string | null, dataText: string): FilterSubject {
  return subjectOf(name, JSON.parse(dataText));
}

/** The subject of a message whose data is already parsed (a request's body), by the same rule. */
export function subjectOf(name: string | null, data: unknown): FilterSubject {
  return { name, data: typeof data === "string" ? parsedIfJson(data) : data };
}

function parsedIfJson(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return text;
  try {
    return JSON.parse(text);
  } catch {
    // Not JSON: without a schema any string may be published, and it is matched as a string.
    return text;
  }
}

/** Whether the message passes the filter. `meter`, when given, counts the work done (tests bound it). */
export function matches(filter: CompiledFilter, subject: FilterSubject, meter?: Meter): boolean {
  if (filter.names !== null) {
    const name = subject.name;
    if (name === null) return false;
    let named = false;
    for (const glob of filter.names) {
      if (glob.test(name, meter)) {
        named = true;
        break;
      }
    }
    if (!named) return false;
  }
  return filter.data === null || evaluate(filter.data, subject.data, meter);
}
