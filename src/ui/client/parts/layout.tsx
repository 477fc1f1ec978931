/** The frame of every view: the top bar, page headers with a trail back, cards and tabs. */
import type { ComponentChildren } from "preact";
import { Link } from "../lib/router.ts";
import { session } from "../lib/session.ts";
import { useOrganization } from "../lib/organization.ts";

const NAV: [string, string][] = [["/queues", "Queues"], ["/events", "Events"], ["/keys", "API keys"]];
/** Shown only to a key that may read the organization (the owner key). */
const ORGANIZATION: [string, string] = ["/organization", "Organization"];

export function Shell({ path, children }: { path: string; children: ComponentChildren }) {
  const org = useOrganization(path);
  const nav = org?.owner ? [...NAV, ORGANIZATION] : NAV;
  return (
    <>
      <header class="topbar">
        <div class="topbar-inner">
          <Link to="/queues" class="brand"><Logo />fanout</Link>
          <nav class="nav" aria-label="Main">
            {nav.map(([to, label]) => (
              <Link key={to} to={to} class="nav-link" current={path === to || path.startsWith(`${to}/`) || (to === "/queues" && path === "/")}>{label}</Link>
            ))}
          </nav>
          <button type="button" class="btn btn-ghost signout" onClick={() => session.signOut()}>Sign out</button>
        </div>
      </header>
      <main class="main">{children}</main>
    </>
  );
}

export type Crumb = [to: string, label: string];

export function PageHeader({ crumbs = [], title, sub, actions }: { crumbs?: Crumb[]; title: ComponentChildren; sub?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <div class="page-header">
      {crumbs.length > 0 && (
        <nav class="crumbs" aria-label="Breadcrumb">
          {crumbs.map(([to, label]) => <span key={to}><Link to={to}>{label}</Link><span class="crumb-sep" aria-hidden="true">/</span></span>)}
        </nav>
      )}
      <div class="page-title-row">
        <div class="page-title">
          <h1>{title}</h1>
          {sub && <div class="page-sub">{sub}</div>}
        </div>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
    </div>
  );
}

export function Card({ title, actions, children, class: className }: { title?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; class?: string }) {
  return (
    <section class={`card ${className ?? ""}`}>
      {(title || actions) && (
        <div class="card-head">
          {title && <h2>{title}</h2>}
          {actions && <div class="card-actions">{actions}</div>}
        </div>
      )}
      {children}
    </section>
  );
}

export function Tabs({ tabs, current }: { tabs: [to: string, label: string][]; current: string }) {
  return (
    <nav class="tabs" aria-label="Sections">
      {tabs.map(([to, label]) => <Link key={to} to={to} class="tab" current={to === current}>{label}</Link>)}
    </nav>
  );
}

/** Shows an id in monospace, cut in the middle on narrow screens by CSS, whole in its tooltip. */
export function Id({ value }: { value: string }) {
  return <code class="id" title={value}>{value}</code>;
}

/** The mark: one message fanned out to three listeners. */
export function Logo() {
  return (
    <svg class="brand-mark" viewBox="0 0 32 32" aria-hidden="true">
      <rect width="32" height="32" rx="7" fill="#3b5bdb" />
      <path d="M8 16h6M14 16l9-7M14 16h9M14 16l9 7" fill="none" stroke="#fff" stroke-width="2.6" stroke-linecap="round" />
      <g fill="#fff"><circle cx="8" cy="16" r="2.6" /><circle cx="24" cy="9" r="2.2" /><circle cx="24" cy="16" r="2.2" /><circle cx="24" cy="23" r="2.2" /></g>
    </svg>
  );
}
