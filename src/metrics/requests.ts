/**
 * HTTP requests by method, route and status, and their durations by method and route. The route label is the
 * pattern of the route that served the request (`/v1/queues/:queue_id/messages`), never a path with ids in
 * it, and unknown paths share one label, so the number of series stays bounded whatever clients send.
 */
import { Buckets, bump, REQUEST_SECONDS } from "./tally.ts";

/** The route label of a path no route serves. */
export const UNMATCHED = "unmatched";
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

type Node = { segments: string[]; next: Node[]; param: Node | null; route: string | null };
const node = (): Node => ({ segments: [], next: [], param: null, route: null });

function child(at: Node, segment: string): Node {
  const i = at.segments.indexOf(segment);
  if (i >= 0) return at.next[i]!;
  at.segments.push(segment);
  at.next.push(node());
  return at.next[at.next.length - 1]!;
}

/** The route below `at` for the path from `from` (just past a "/") to `end`, or null. */
function find(at: Node, path: string, from: number, end: number): string | null {
  if (from > end) return at.route;
  let stop = path.indexOf("/", from);
  if (stop < 0 || stop > end) stop = end;
  const length = stop - from;
  const { segments, next } = at;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.length !== length || !path.startsWith(segment, from)) continue;
    const found = find(next[i]!, path, stop + 1, end);
    if (found !== null) return found;
  }
  return at.param !== null && length > 0 ? find(at.param, path, stop + 1, end) : null;
}

/**
 * A path → pattern matcher over the app's routes (Elysia's `app.routes` paths, `:name` for a parameter). A
 * fixed segment wins over a parameter, as in Elysia's router; one trailing slash is ignored. It walks the path
 * in place, comparing segments at their offsets, so a request costs no allocation here.
 */
export function routeLabels(patterns: Iterable<string>): (path: string) => string {
  const root = node();
  for (const pattern of patterns) {
    let at = root;
    for (const segment of pattern.split("/").slice(1)) at = segment.startsWith(":") ? (at.param ??= node()) : child(at, segment);
    at.route = pattern;
  }
  return (path) => {
    const end = path.length > 1 && path.charCodeAt(path.length - 1) === 47 ? path.length - 1 : path.length;
    return (path.charCodeAt(0) === 47 ? find(root, path, 1, end) : null) ?? UNMATCHED;
  };
}

type MethodStats = { buckets: Buckets; statuses: Map<number, number> };

export class RequestTally {
  private readonly routes = new Map<string, Map<string, MethodStats>>();

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.routes.get(route);
    if (!byMethod) this.routes.set(route, (byMethod = new Map()));
    const m = METHODS.has(method) ? method : "other";
    let stats = byMethod.get(m);
    if (!stats) byMethod.set(m, (stats = { buckets: new Buckets(REQUEST_SECONDS), statuses: new Map() }));
    stats.buckets.observe(seconds);
    bump(stats.statuses, status);
  }

  *durations(): Iterable<{ labels: { method: string; route: string }; buckets: Buckets }> {
    for (const [route, byMethod] of this.routes) for (const [method, s] of byMethod) yield { labels: { method, route }, buckets: s.buckets };
  }

  *counts(): Iterable<{ labels: { method: string; route: string; status: string }; value: number }> {
    for (const [route, byMethod] of this.routes) {
      for (const [method, s] of byMethod) for (const [status, value] of s.statuses) yield { labels: { method, route, status: String(status) }, value };
    }
  }
}
