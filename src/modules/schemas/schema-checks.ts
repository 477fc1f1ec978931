import type { FieldError } from "./message-schema.ts";
import { isRecord, pointerSegment } from "./json-values.ts";
import { patternProblem } from "./patterns.ts";

/**
 * Deeper schemas are refused so that compiling and validating, which recurse once per level, cannot
 * exhaust the stack on a hostile schema; no real message shape comes near it.
 */
export const MAX_SCHEMA_DEPTH = 32;

const DIRECTIVE_KEYS = {
  object: ["type", "props", "required", "strict"],
  array: ["type", "items", "required"],
  string: ["type", "pattern", "enum", "min", "max", "required"],
  number: ["type", "min", "max", "required"],
} as const;
type DirectiveType = keyof typeof DIRECTIVE_KEYS;

type Directive = Record<string, unknown>;
type Report = (path: string, message: string) => void;

/** Every problem in a schema, with paths into the schema; [] means the schema can be compiled. */
export function checkSchema(schema: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const report: Report = (path, message) => errors.push({ path, message });
  if (!isRecord(schema)) {
    report("", "must be an object mapping property names to directives");
  } else {
    checkProps(schema, "", 1, report);
  }
  return errors;
}

function checkProps(props: Record<string, unknown>, path: string, depth: number, report: Report): void {
  const names = Object.keys(props);
  if (names.length === 0) report(path, "must declare at least one property");
  for (const name of names) checkDirective(props[name], path + pointerSegment(name), depth, report);
}

function checkDirective(directive: unknown, path: string, depth: number, report: Report): void {
  if (!isRecord(directive)) return report(path, "must be a directive object");
  if (depth > MAX_SCHEMA_DEPTH) return report(path, `nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  const type = directive.type;
  if (type === undefined) return report(path + "/type", "is required");
  if (typeof type !== "string" || !Object.hasOwn(DIRECTIVE_KEYS, type)) {
    return report(path + "/type", `unknown type ${JSON.stringify(type)}; expected object, array, string or number`);
  }
  const allowed: readonly string[] = DIRECTIVE_KEYS[type as DirectiveType];
  for (const key of Object.keys(directive)) {
    if (!allowed.includes(key)) report(path + pointerSegment(key), `is not a directive of type ${type}`);
  }
  checkBoolean(directive, "required", path, report);
  if (type === "object") checkObject(directive, path, depth, report);
  else if (type === "array") checkArray(directive, path, depth, report);
  else if (type === "string") checkString(directive, path, report);
  else checkNumber(directive, path, report);
}

function checkObject(directive: Directive, path: string, depth: number, report: Report): void {
  checkBoolean(directive, "strict", path, report);
  const props = directive.props;
  if (props === undefined) report(path + "/props", "is required for type object");
  else if (!isRecord(props)) report(path + "/props", "must be an object mapping property names to directives");
  else checkProps(props, path + "/props", depth + 1, report);
}

function checkArray(directive: Directive, path: string, depth: number, report: Report): void {
  if (directive.items === undefined) report(path + "/items", "is required for type array");
  else checkDirective(directive.items, path + "/items", depth + 1, report);
}

function checkString(directive: Directive, path: string, report: Report): void {
  checkPattern(directive.pattern, path + "/pattern", report);
  checkEnum(directive.enum, path + "/enum", report);
  const isLength = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  checkRange(directive, path, isLength, "must be a non-negative integer or null", report);
}

function checkNumber(directive: Directive, path: string, report: Report): void {
  const isBound = (n: unknown) => typeof n === "number" && Number.isFinite(n);
  checkRange(directive, path, isBound, "must be a finite number or null", report);
}

function checkBoolean(directive: Directive, key: string, path: string, report: Report): void {
  const value = directive[key];
  if (value !== undefined && typeof value !== "boolean") report(path + "/" + key, "must be a boolean");
}

function checkPattern(pattern: unknown, path: string, report: Report): void {
  if (pattern === undefined || pattern === null) return;
  if (typeof pattern !== "string") return report(path, "must be a string or null");
  const problem = patternProblem(pattern);
  if (problem) report(path, problem);
}

function checkEnum(values: unknown, path: string, report: Report): void {
  if (values === undefined || values === null) return;
  if (!Array.isArray(values)) return report(path, "must be an array of strings or null");
  // An empty enum would silently refuse every message on the queue.
  if (values.length === 0) return report(path, "must list at least one value");
  values.forEach((value, index) => {
    if (typeof value !== "string") report(path + pointerSegment(index), "must be a string");
  });
}

function checkRange(
  directive: Directive,
  path: string,
  isValid: (n: unknown) => boolean,
  message: string,
  report: Report,
): void {
  const { min, max } = directive;
  const minOk = min === undefined || min === null || isValid(min);
  const maxOk = max === undefined || max === null || isValid(max);
  if (!minOk) report(path + "/min", message);
  if (!maxOk) report(path + "/max", message);
  if (typeof min === "number" && typeof max === "number" && minOk && maxOk && min > max) {
    report(path + "/min", `must not exceed max (${max})`);
  }
}
