/** Which methods a path has, so an unknown method on a known path is 405 with `Allow`, not 404. */
type Route = { method: string; pattern: RegExp };

export function routeTable(routes: { method: string; path: string }[]): (path: string) => string[] {
  const table: Route[] = routes
    .filter((r) => r.method !== "ALL")
    .map((r) => ({ method: r.method, pattern: new RegExp(`^${r.path.replace(/:[^/]+/g, "[^/]+")}/?$`) }));
  return (path) => [...new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method))];
}
