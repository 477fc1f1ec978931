import type { Directive, FieldError, QueueMessageSchema } from "./message-schema.ts";
import { codePointLength, isRecord, ownValue, pointerSegment } from "./json-values.ts";
import { compilePattern, patternProblem, STEP_BUDGET, type Pattern } from "./patterns.ts";

/** What one message may still spend on patterns (patterns.ts), shared by every check of that message. */
export type Budget = { steps: number };
export const freshBudget = (): Budget => ({ steps: STEP_BUDGET });

/**
 * A precompiled check: pushes one error per failing path onto `errors` and never stops early, because a
 * refused publish must list every failing path (docs/api.md, Queue message schemas).
 */
export type Check = (value: unknown, path: string, errors: FieldError[], budget: Budget) => void;

/** Precondition: checkSchema(schema) returned []; an invalid pattern would throw here. */
export function compileSchema(schema: QueueMessageSchema): Check {
  return compileDirective({ type: "object", props: schema, strict: true, required: true });
}

function compileDirective(directive: Directive): Check {
  const check = compileType(directive);
  if (directive.required === false) {
    return (value, path, errors, budget) => {
      if (value !== null && value !== undefined) check(value, path, errors, budget);
    };
  }
  return (value, path, errors, budget) => {
    if (value === null || value === undefined) errors.push({ path, message: "is required" });
    else check(value, path, errors, budget);
  };
}

function compileType(directive: Directive): Check {
  switch (directive.type) {
    case "object":
      return compileObject(directive.props, directive.strict !== false);
    case "array":
      return compileArray(directive.items);
    case "string":
      return compileString(directive);
    case "number":
      return compileNumber(directive.min ?? null, directive.max ?? null);
  }
}

function compileObject(props: Record<string, Directive>, strict: boolean): Check {
  const fields = Object.keys(props).map((name) => ({
    name,
    segment: pointerSegment(name),
    check: compileDirective(props[name]!),
  }));
  const declared = new Set(fields.map((field) => field.name));
  return (value, path, errors, budget) => {
    if (!isRecord(value)) {
      errors.push({ path, message: "must be an object" });
      return;
    }
    for (const field of fields) field.check(ownValue(value, field.name), path + field.segment, errors, budget);
    if (!strict) return;
    for (const name of Object.keys(value)) {
      if (!declared.has(name)) errors.push({ path: path + pointerSegment(name), message: "is not a declared property" });
    }
  };
}

function compileArray(items: Directive): Check {
  const checkItem = compileDirective(items);
  return (value, path, errors, budget) => {
    if (!Array.isArray(value)) {
      errors.push({ path, message: "must be an array" });
      return;
    }
    for (let i = 0; i < value.length; i++) checkItem(value[i], path + "/" + i, errors, budget);
  };
}

type StringDirective = Extract<Directive, { type: "string" }>;

function compileString(directive: StringDirective): Check {
  const pattern = directive.pattern == null ? null : patternOf(directive.pattern);
  const allowed = directive.enum == null ? null : new Set(directive.enum);
  const allowedList = directive.enum?.map((value) => JSON.stringify(value)).join(", ");
  const min = directive.min ?? null;
  const max = directive.max ?? null;
  return (value, path, errors, budget) => {
    if (typeof value !== "string") {
      errors.push({ path, message: "must be a string" });
      return;
    }
    if (min !== null || max !== null) {
      const length = codePointLength(value);
      if (min !== null && length < min) errors.push({ path, message: `must have at least ${min} characters` });
      if (max !== null && length > max) errors.push({ path, message: `must have at most ${max} characters` });
    }
    if (pattern !== null) checkPattern(pattern, value, path, errors, budget);
    if (allowed !== null && !allowed.has(value)) errors.push({ path, message: `must be one of ${allowedList}` });
  };
}

/** A schema saved before patterns ran on RE2 may hold one RE2 cannot run: its strings fail with the reason, not a 500. */
function patternOf(source: string): Pattern | { problem: string } {
  const problem = patternProblem(source);
  return problem ? { problem } : compilePattern(source);
}

function checkPattern(pattern: Pattern | { problem: string }, value: string, path: string, errors: FieldError[], budget: Budget): void {
  if ("problem" in pattern) {
    errors.push({ path, message: `cannot be checked: the queue schema's pattern ${pattern.problem}; update the schema` });
    return;
  }
  budget.steps -= pattern.steps(value);
  if (budget.steps < 0) {
    errors.push({ path, message: `is more text than fanout checks against patterns in one message (see docs/security.md)` });
  } else if (!pattern.test(value)) {
    errors.push({ path, message: `must match the pattern ${pattern.source}` });
  }
}

function compileNumber(min: number | null, max: number | null): Check {
  return (value, path, errors) => {
    if (typeof value !== "number" || !Number.isFinite(value)) {
      errors.push({ path, message: "must be a finite number" });
      return;
    }
    if (min !== null && value < min) errors.push({ path, message: `must be at least ${min}` });
    if (max !== null && value > max) errors.push({ path, message: `must be at most ${max}` });
  };
}
