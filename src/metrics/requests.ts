/**
 * HTTP requests by method, route and status, and their durations by method and route. The route label is the
 * pattern of the route that served the request (`/v1/queues/:queue_id/messages`), never a path with ids in
 * it, and unknown paths share one label, so the number of series stays bounded whatever clients send.
 */
import { Buckets, bump, REQUEST_SECONDS } from "./tally.ts";

/** The route label of a path no route serves. */
export const UNMATCHED = "unmatched";
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

type Node = { fixed: Map<string, Node>; param: Node | null; route: string | null };
const node = (): Node => ({ fixed: new Map(), param: null, route: null });

/**
 * A path → pattern matcher over the app's routes (Elysia's `app.routes` paths, `:name` for a parameter). A
 * fixed segment wins over a parameter, as in Elysia's router; one trailing slash is ignored.
 */
export function routeLabels(patterns: Iterable<string>): (path: string) => string {
  const root = node();
  for (const pattern of patterns) {
    let at = root;
    for (const segment of pattern.split("/").slice(1)) {
      if (segment.startsWith(":")) at = at.param ??= node();
      else at = at.fixed.get(segment) ?? at.fixed.set(segment, node()).get(segment)!;
    }
    at.route = pattern;
  }
  const find = (at: Node, segments: string[], i: number): string | null => {
    if (i === segments.length) return at.route;
    const fixed = at.fixed.get(segments[i]!);
    const found = fixed ? find(fixed, segments, i + 1) : null;
    return found ?? (at.param && segments[i] !== "" ? find(at.param, segments, i + 1) : null);
  };
  return (path) => {
    const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    return find(root, trimmed.split("/").slice(1), 0) ?? UNMATCHED;
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
