/** The dashboard's newest-first pages over the API's oldest-first ones (src/ui/client/lib/paging.ts). */
import { expect, test } from "bun:test";
import { newestItems, newestSpan } from "../../src/ui/client/lib/paging.ts";

/** Items 0..total-1 oldest first, paged as the API pages them, then read back through the span. */
function view(total: number, page: number, size: number): number[] {
  const span = newestSpan(total, page, size);
  const all = Array.from({ length: total }, (_, i) => i);
  const fetched = span.apiPages.flatMap((p) => all.slice((p - 1) * size, p * size));
  return newestItems(span, fetched, size);
}

test("the first page is the newest items, newest first, even across two API pages", () => {
  expect(view(4, 1, 20)).toEqual([3, 2, 1, 0]);
  expect(view(25, 1, 20)).toEqual([24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5]);
  expect(newestSpan(25, 1, 20).apiPages).toEqual([1, 2]);
  expect(newestSpan(40, 1, 20).apiPages).toEqual([2]);
});

test("later pages step back by a page size; the last one holds the oldest items; beyond it nothing", () => {
  expect(view(25, 2, 20)).toEqual([4, 3, 2, 1, 0]);
  expect(newestSpan(25, 2, 20).apiPages).toEqual([1]);
  expect(view(7, 2, 3)).toEqual([3, 2, 1]);
  expect(view(7, 3, 3)).toEqual([0]);
  expect(view(7, 4, 3)).toEqual([]);
  expect(view(0, 1, 20)).toEqual([]);
});

test("every item appears exactly once over all pages", () => {
  for (const [total, size] of [[1, 1], [10, 3], [101, 20], [60, 20]] as const) {
    const seen: number[] = [];
    for (let page = 1; page <= Math.ceil(total / size); page++) seen.push(...view(total, page, size));
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => total - 1 - i));
  }
});
