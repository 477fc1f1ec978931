/** A JSON object: arrays and null are excluded because every caller treats them as a different kind. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 6901 escaping, so a property named "a/b" cannot be mistaken for a nested path. */
export function pointerSegment(key: string | number): string {
  return "/" + String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * Reads only own properties: a message without "constructor" must count as missing, not as
 * Object.prototype.constructor.
 */
export function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Characters as schemas count them: code points, so an emoji is one character, not two UTF-16 units. */
export function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const high = text.charCodeAt(i);
    if (high < 0xd800 || high > 0xdbff) continue;
    const low = text.charCodeAt(i + 1);
    if (low >= 0xdc00 && low <= 0xdfff) {
      length--;
      i++;
    }
  }
  return length;
}
