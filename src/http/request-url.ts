/**
 * A request's URL split by string search instead of the WHATWG parser: `new URL` cost a few µs, and the publish
 * path parsed each request's URL four times (version prefix, gate, origin for links, `pretty`). This is sound
 * because Bun hands the server a URL it has already normalized (host lowercased, default port dropped, dot
 * segments resolved, fragment dropped), so the pieces are exactly `new URL(url).origin` and `.pathname`;
 * request-url.test.ts holds the two against each other on URLs a real server received.
 * A Host header Bun cannot use leaves the URL relative (`/v1/…`), and a bad port one that does not parse; the
 * server answers both 400 before routing (server.ts), so every URL here parses.
 */
export type UrlParts = { origin: string; path: string; search: string };

/**
 * Elysia takes the path to start at the first "/" from index 11 of the URL (its `standardHostname` shortcut: no
 * origin is shorter than "http://a.bc"), so behind a shorter origin ("https://x", "http://a:1") it routes a piece
 * of the path (`/queues` for `/v1/queues`). Such a request is routed with a marker appended to its host name
 * ("https://x.short-host.invalid"), which `requestOrigin` takes out again for links. The marker lives in the URL,
 * so it survives every copy of the request; `.invalid` is reserved (RFC 2606), so no real host carries it.
 */
export const SHORTEST_ROUTABLE_ORIGIN = 11;
const MARK = ".short-host.invalid";

/** The request at `origin` + `pathAndSearch`, its host marked when `origin` is too short for Elysia. */
export function readdressed(request: Request, origin: string, pathAndSearch: string): Request {
  if (origin.length >= SHORTEST_ROUTABLE_ORIGIN) return new Request(origin + pathAndSearch, request);
  const port = origin.indexOf(":", origin.indexOf("://") + 3); // a short origin is a name, never an IPv6 literal
  const marked = port < 0 ? origin + MARK : origin.slice(0, port) + MARK + origin.slice(port);
  return new Request(marked + pathAndSearch, request);
}

/** The origin the client addressed. */
export function requestOrigin(request: Request): string {
  const { origin } = splitUrl(request.url);
  const mark = origin.indexOf(MARK);
  return mark < 0 ? origin : origin.slice(0, mark) + origin.slice(mark + MARK.length);
}

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
