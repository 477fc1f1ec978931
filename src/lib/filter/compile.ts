/**
 * Checks a listener's filter and compiles it. Every problem is reported with the JSON pointer of the offending
 * part (under `base`, the filter's own place in the request body), up to MAX_FILTER_ERRORS of them.
 */
import type { FieldError } from "../errors.ts";
import { compileConditions } from "./conditions.ts";
import type { Condition } from "./evaluate.ts";
import { compileGlob, type Glob } from "./glob.ts";
import { isRecord } from "./json-values.ts";
import { FILTER_LIMITS, FilterProblems } from "./limits.ts";
import { pointerSegment } from "../json-pointer.ts";

/** A filter as saved and shown: the validated input, parts given as null left out. */
export type FilterSpec = { names?: string[]; data?: Record<string, unknown> };

export type CompiledFilter = {
  readonly spec: FilterSpec;
  /** Null: every message, named or not, passes this part. */
  readonly names: readonly Glob[] | null;
  readonly data: Condition | null;
};

export type FilterCompilation = { ok: true; filter: CompiledFilter } | { ok: false; errors: FieldError[] };

export function compileFilter(value: unknown, base = "/filter"): FilterCompilation {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // Only a caller in code can pass a cycle or a BigInt; a request body is JSON already.
    return { ok: false, errors: [{ path: base, message: "must be a JSON value" }] };
  }
  if (text === undefined || !isRecord(value)) {
    return { ok: false, errors: [{ path: base, message: "must be an object with names, data or both" }] };
  }
  const problems = new FilterProblems();
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > FILTER_LIMITS.bytes) problems.add(base, `is ${bytes} bytes serialized; at most ${FILTER_LIMITS.bytes}`);
  // Compiled from a copy of plain JSON values, which is also what is kept as the spec.
  const copy = JSON.parse(text) as Record<string, unknown>;
  for (const key of Object.keys(copy)) {
    if (key !== "names" && key !== "data") problems.add(base + pointerSegment(key), "is not a known field");
  }
  const names = copy.names == null ? null : compileNames(copy.names, `${base}/names`, problems);
  const data = copy.data == null ? null : compileConditions(copy.data, `${base}/data`, 1, problems);
  if (problems.errors.length > 0) return { ok: false, errors: problems.errors };
  const spec: FilterSpec = {};
  if (copy.names != null) spec.names = copy.names as string[];
  if (copy.data != null) spec.data = copy.data as Record<string, unknown>;
  return { ok: true, filter: { spec, names, data } };
}

/** What the store saves (as JSON) and compiles again when it reads the listener; that compile cannot fail. */
export function canonicalFilter(filter: CompiledFilter): FilterSpec {
  return filter.spec;
}

function compileNames(value: unknown, path: string, problems: FilterProblems): Glob[] | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_LIMITS.names) {
    problems.add(path, `must be an array of 1 to ${FILTER_LIMITS.names} name patterns`);
    return null;
  }
  const globs: Glob[] = [];
  value.forEach((pattern, i) => {
    const patternPath = path + pointerSegment(i);
    problems.count(patternPath);
    if (typeof pattern !== "string" || pattern.length === 0 || codePoints(pattern) > FILTER_LIMITS.nameCharacters) {
      problems.add(patternPath, `must be a string of 1 to ${FILTER_LIMITS.nameCharacters} characters`);
    } else {
      globs.push(compileGlob(pattern));
    }
  });
  return globs;
}

/** Characters are counted as code points, as names are: an emoji is one. */
function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
