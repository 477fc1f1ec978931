/**
 * Pagination (docs/api.md): `page` from 1, `per_page` 10 by default and at most 100; navigation in an
 * RFC 8288 Link header and the total in X-Total-Count.
 */
import { t } from "elysia";
import type { Page } from "../store/index.ts";
import { splitUrl } from "./request-url.ts";
import { AppError } from "../lib/errors.ts";

const MAX = { page: 1_000_000, per_page: 100 };

export const PagingQuery = {
  page: t.Optional(t.Integer({ minimum: 1, maximum: MAX.page, description: "page number, from 1" })),
  per_page: t.Optional(t.Integer({ minimum: 1, maximum: MAX.per_page, description: "items per page (default 10)" })),
};

/**
 * Checked here again, whatever the route's model did: the store binds these as LIMIT and OFFSET, and a value
 * that is not a small integer there is a SQL error (a 500), not a 400.
 */
function pagingValue(query: Record<string, unknown>, name: keyof typeof MAX, fallback: number): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= 1 && n <= MAX[name]) return n;
  const message = `must be an integer from 1 to ${MAX[name]}`;
  throw new AppError(400, `The query parameter ${name} ${message}.`, [{ path: name, message }]);
}

export function pageOf(query: { page?: unknown; per_page?: unknown }): Page & { page: number; perPage: number } {
  const page = pagingValue(query, "page", 1);
  const perPage = pagingValue(query, "per_page", 10);
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
