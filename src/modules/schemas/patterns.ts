/**
 * Schema patterns run on RE2 (re2js), never on the JavaScript engine. JavaScript's RegExp backtracks: `^(a+)+$`
 * takes exponential time on a short string, and even `\d+\d+x` quadratic time, which no check of the pattern at
 * save time rules out in general. RE2 matches in time linear in
 * the input for a given pattern, at the price of the constructs only a backtracking engine can run (lookaround,
 * backreferences), which are refused when the schema is saved, with the construct named.
 *
 * Linear is not yet cheap: the cost per character grows with the pattern's program. So a pattern is at most
 * MAX_PROGRAM instructions, and one message may spend at most STEP_BUDGET (characters × instructions) on
 * patterns, which bounds the worst message at tens of milliseconds (docs/security.md has the figures).
 */
import { RE2JS } from "re2js";

/** Instructions of a pattern's compiled program; RE2 itself refuses repeat counts above 1000. */
export const MAX_PROGRAM = 1000;
/** Characters × program instructions one message may run through its schema's patterns. */
export const STEP_BUDGET = 524_288;
/** re2js gives each pattern's lazy DFA 8 MB by default; a thousand cached schemas could hold gigabytes. */
const DFA_MEMORY = 65_536;

export type Pattern = {
  test(text: string): boolean;
  /** What matching `text` costs against the message's budget. */
  steps(text: string): number;
  source: string;
  /** The DFA's memory budget in bytes, as re2js holds it (patterns.test.ts checks the override took). */
  dfaMemory: number;
};

/** Why `source` cannot be a schema pattern, naming the construct; null when it can. */
export function patternProblem(source: string): string | null {
  try {
    new RegExp(source);
  } catch (error) {
    return `is not a valid regular expression: ${(error as Error).message}`;
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch (error) {
    return `uses ${construct(source, (error as Error).message)}, which fanout does not run: patterns are matched in linear time (RE2 syntax), without lookaround or backreferences`;
  }
  const size = compiled.matcher("").programSize();
  if (size > MAX_PROGRAM) return `is too large to match in bounded time (${size} instructions; at most ${MAX_PROGRAM})`;
  return null;
}

/** The construct an RE2 parse error is about, in words a schema author recognizes. */
function construct(source: string, message: string): string {
  if (/\(\?<?[=!]/.test(source)) return "lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`)";
  if (/\\[1-9]|\\k</.test(source)) return "a backreference (`\\1`, `\\k<name>`)";
  const detail = message.replace(/^error parsing regexp: /, "");
  return `a construct RE2 cannot run (${detail})`;
}

/** Precondition: patternProblem(source) is null. */
export function compilePattern(source: string): Pattern {
  const compiled = RE2JS.compile(source);
  const dfaMemory = boundDfaMemory(compiled);
  const size = compiled.matcher("").programSize();
  return { test: (text) => compiled.test(text), steps: (text) => text.length * size, source, dfaMemory };
}

type Dfa = { maxMem: number; constructor: new (prog: unknown, maxMem: number) => Dfa };

/** re2js offers no option for it: the RE2 object's lazy DFA is replaced by one with a smaller budget. */
function boundDfaMemory(compiled: RE2JS): number {
  const re2 = compiled.re2() as unknown as { dfa: Dfa; prog: unknown; lazyDFA: Dfa };
  re2.lazyDFA = new re2.dfa.constructor(re2.prog, DFA_MEMORY);
  return re2.dfa.maxMem;
}
