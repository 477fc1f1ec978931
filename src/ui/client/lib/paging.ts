/**
 * Newest-first pages over an API that pages oldest first (`page` from 1, `per_page` items). Page `page` of the
 * newest-first view holds items [start, end) counted from the oldest; they lie on at most two API pages of
 * the same size.
 */
export type Span = { start: number; end: number; apiPages: number[] };

export function newestSpan(total: number, page: number, size: number): Span {
  const end = Math.max(0, total - (page - 1) * size);
  const start = Math.max(0, end - size);
  if (end <= start) return { start, end, apiPages: [] };
  const first = Math.floor(start / size) + 1;
  const last = Math.floor((end - 1) / size) + 1;
  return { start, end, apiPages: Array.from({ length: last - first + 1 }, (_, i) => first + i) };
}

/** The span's items, newest first, from its API pages' items in order. */
export function newestItems<T>(span: Span, fetched: T[], size: number): T[] {
  const offset = ((span.apiPages[0] ?? 1) - 1) * size;
  return fetched.slice(span.start - offset, span.end - offset).reverse();
}
