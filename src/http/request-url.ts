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

/**
 * Elysia takes the path to start at the first "/" from index 11 of the URL (its `standardHostname` shortcut: no
 * origin is shorter than "http://a.bc"), so behind a shorter origin ("https://x", "http://a:1") it routes a piece
 * of the path (`/queues` for `/v1/queues`). Such a request is routed under a stand-in origin long enough for
 * Elysia, and `requestOrigin` gives links the real one.
 */
export const SHORTEST_ROUTABLE_ORIGIN = 11;
const STAND_IN = "https://fanout.invalid";
const standIns = new WeakMap<Request, string>();

/** The request at `origin` + `pathAndSearch`, under the stand-in origin when `origin` is too short for Elysia. */
export function readdressed(request: Request, origin: string, pathAndSearch: string): Request {
  if (origin.length >= SHORTEST_ROUTABLE_ORIGIN) return new Request(origin + pathAndSearch, request);
  const routed = new Request(STAND_IN + pathAndSearch, request);
  standIns.set(routed, origin);
  return routed;
}

/** The origin the client addressed; a URL string compare unless the request runs under the stand-in. */
export function requestOrigin(request: Request): string {
  const { origin } = splitUrl(request.url);
  return origin === STAND_IN ? (standIns.get(request) ?? origin) : origin;
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
