/** RFC 6901 escaping of one segment, so a key holding "/" cannot be mistaken for two segments of a path. */
export function pointerSegment(key: string | number): string {
  return "/" + String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}
