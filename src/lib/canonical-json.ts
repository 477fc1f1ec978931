/**
 * One spelling per JSON value: keys sorted by UTF-16 code units at every level, no whitespace. Equal values get
 * equal text whatever their formatting or key order (a queue's `schema_id`, an Idempotency-Key's fingerprint).
 * Written out by hand because JSON.stringify always emits integer-like keys ("2", "10") first, whatever order
 * they were inserted in.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return "[" + value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",") + "]";
  }
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => JSON.stringify(key) + ":" + canonicalJson(record[key]));
    return "{" + members.join(",") + "}";
  }
  return JSON.stringify(value) ?? "null";
}
