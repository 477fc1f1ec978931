/**
 * A request's URL split by string search instead of the WHATWG parser: `new URL` cost a few µs, and the publish
 * path parsed each request's URL four times (version prefix, gate, origin for links, `pretty`). This is sound
 * because Bun hands the server a URL it has already normalized (host lowercased, default port dropped, dot
 * segments resolved, fragment dropped), so the pieces are exactly `new URL(url).origin` and `.pathname`;
 * request-url.test.ts holds the two against each other on URLs a real server received.
 * A Host header Bun cannot use leaves the URL relative (`/v1/…`); the server answers those 400 before routing,
 * and here their origin would be empty.
 */
export type UrlParts = { origin: string; path: string; search: string };

export function splitUrl(url: string): UrlParts {
  const scheme = url.indexOf("://");
  const start = scheme < 0 ? url.indexOf("/") : url.indexOf("/", scheme + 3);
  if (start < 0) return { origin: url, path: "/", search: "" };
  const q = url.indexOf("?", start);
  const end = q < 0 ? url.length : q;
  return { origin: url.slice(0, start), path: url.slice(start, end), search: url.slice(end) };
}

/** True for `pretty`, `pretty=`, `pretty=true` and `pretty=1`; the query is parsed only when it names `pretty`. */
export function wantsPretty(search: string): boolean {
  if (!search.includes("pretty")) return false;
  const value = new URLSearchParams(search).get("pretty");
  return value === "" || value === "true" || value === "1";
}
