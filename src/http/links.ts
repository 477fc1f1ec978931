/** Hypermedia links: always link objects with absolute URLs under /v1 (docs/api.md). */
import { requestOrigin } from "./request-url.ts";

export type Link = { href: string };
export type Links = Record<string, Link>;

export function originOf(request: Request, baseUrl: string | undefined): string {
  return baseUrl || requestOrigin(request);
}

export function link(origin: string, path: string): Link {
  return { href: `${origin}/v1${path}` };
}

/** `self` plus one link per item keyed by its name; an unnamed or repeated name falls back to the item's id. */
export function itemLinks(origin: string, self: string, items: { id: string; name: string | null }[], path: (id: string) => string): Links {
  const links: Links = { self: link(origin, self) };
  for (const item of items) {
    const key = item.name && !(item.name in links) ? item.name : item.id;
    links[key] = link(origin, path(item.id));
  }
  return links;
}
