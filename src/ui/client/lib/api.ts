/**
 * Calls to the public /v1 API of the origin that served the page, with the tab's key. Failures become an
 * ApiError carrying the API's JSON error (`title`, `status`, `detail`, `errors`) so views can show it as sent.
 * Paths are built here rather than taken from `_links`: a `--base-url` may name another origin than the one
 * the browser reached, and the page's Content-Security-Policy allows only its own.
 */
import { newestItems, newestSpan } from "./paging.ts";
import { session } from "./session.ts";

export type FieldError = { path: string; message: string };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail?: string,
    readonly errors: FieldError[] = [],
    readonly retryAfter?: number,
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

export type Reply<T> = { body: T; status: number; total: number | null };

type CallOptions = { body?: unknown; key?: string };

export async function call<T = any>(method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const key = options.key ?? session.key() ?? "";
  const headers: Record<string, string> = { accept: "application/json", "x-api-key": key };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    response = await fetch(path, { method, headers, body, cache: "no-store", credentials: "omit" });
  } catch {
    throw new ApiError(0, "The server did not answer", "Check that fanout is running and reachable; the dashboard keeps trying.");
  }
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined; // not JSON (a proxy's error page): the status line is all there is to show
  }
  if (!response.ok) {
    const retry = Number(response.headers.get("retry-after"));
    const error = new ApiError(response.status, parsed?.title ?? `HTTP ${response.status}`, parsed?.detail, parsed?.errors ?? [], retry > 0 ? retry : undefined);
    // A key that stops working while in use (disabled, deleted) ends the session; sign-in passes its own key.
    if (response.status === 401 && options.key === undefined) session.signOut(describe(error));
    throw error;
  }
  const total = response.headers.get("x-total-count");
  return { body: parsed as T, status: response.status, total: total === null ? null : Number(total) };
}

export const get = <T = any>(path: string) => call<T>("GET", path).then((r) => r.body);

export function describe(error: ApiError): string {
  return error.detail ? `${error.title} — ${error.detail}` : error.title;
}

export const asApiError = (error: unknown): ApiError =>
  error instanceof ApiError ? error : new ApiError(-1, "Something went wrong in the dashboard", String((error as Error)?.message ?? error));

export const enc = encodeURIComponent;

/** One page of a list, newest first (paging.ts): one request for the total, at most two for the items. */
export async function newestPage<T>(path: string, field: string, page: number, size: number): Promise<{ items: T[]; total: number }> {
  const total = (await call<unknown>("GET", `${path}?per_page=1`)).total ?? 0;
  const span = newestSpan(total, page, size);
  const pages = await Promise.all(span.apiPages.map((p) => get<Record<string, T[]>>(`${path}?per_page=${size}&page=${p}`)));
  return { items: newestItems(span, pages.flatMap((p) => p[field] ?? []), size), total };
}
