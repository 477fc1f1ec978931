/**
 * Routes are paths under /ui/ (the server answers every one with the page), changed with the History API so
 * moving between views needs no reload and the browser's back button works.
 */
import { h, type ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

/** Where the app's paths live: /ui for the dashboard, /portal/<session id> for a portal (setBase). */
let BASE = "/ui";
const listeners = new Set<() => void>();

export function setBase(base: string): void {
  BASE = base;
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to}`;
  if (url === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.scrollTo(0, 0);
  for (const listener of listeners) listener();
}

/** The path under /ui (always starting with "/") and its query. */
export function usePath(): { path: string; query: URLSearchParams } {
  const read = () => ({ path: location.pathname.slice(BASE.length) || "/", query: new URLSearchParams(location.search) });
  const [where, setWhere] = useState(read);
  useEffect(() => {
    const update = () => setWhere(read());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return where;
}

/** `/queues/:q/messages/:m` against a path: the named segments, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/").filter(Boolean);
  const have = path.split("/").filter(Boolean);
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i]!.startsWith(":")) params[want[i]!.slice(1)] = decodeURIComponent(have[i]!);
    else if (want[i] !== have[i]) return null;
  }
  return params;
}

type LinkProps = { to: string; class?: string; children: ComponentChildren; current?: boolean };

/** A real link (it opens in a new tab as usual); a plain click moves within the page. */
export function Link({ to, class: className, children, current }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return h("a", { href: `${BASE}${to}`, class: className, onClick, "aria-current": current ? "page" : undefined }, children);
}
