/**
 * Pagination (SPEC 8.2, PRODUCT §4): `page` from 1, `per_page` 10 by default and at most 100; navigation in an
 * RFC 8288 Link header and the total in X-Total-Count.
 */
import { t } from "elysia";
import type { Page } from "../store/index.ts";
import { splitUrl } from "./request-url.ts";

export const PagingQuery = {
  page: t.Optional(t.Integer({ minimum: 1, maximum: 1_000_000, description: "page number, from 1" })),
  per_page: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: "items per page (default 10)" })),
};

export function pageOf(query: { page?: number; per_page?: number }): Page & { page: number; perPage: number } {
  const page = query.page ?? 1;
  const perPage = query.per_page ?? 10;
  return { page, perPage, offset: (page - 1) * perPage, limit: perPage };
}

export function pagingHeaders(request: Request, origin: string, p: { page: number; perPage: number }, total: number): Record<string, string> {
  const { path, search } = splitUrl(request.url);
  const last = Math.max(1, Math.ceil(total / p.perPage));
  const at = (page: number) => {
    const q = new URLSearchParams(search);
    q.set("page", String(page));
    q.set("per_page", String(p.perPage));
    return `<${origin}${path}?${q}>`;
  };
  const rels = [`${at(1)}; rel="first"`];
  if (p.page > 1) rels.push(`${at(Math.min(p.page - 1, last))}; rel="prev"`);
  if (p.page < last) rels.push(`${at(p.page + 1)}; rel="next"`);
  rels.push(`${at(last)}; rel="last"`);
  return { link: rels.join(", "), "x-total-count": String(total) };
}
