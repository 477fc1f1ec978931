/**
 * The portal (docs/portal.md): the dashboard's listener views for an organization's customer, at
 * /portal/<session id>#<token>. The token moves from the fragment into this frame's sessionStorage and the
 * fragment leaves the address bar before anything renders; every call sends it as X-API-KEY, so the server
 * decides what it reaches. A refused token (expired, revoked) ends the portal in a page with the way back.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { asApiError, get, type ApiError } from "../lib/api.ts";
import { match, setBase, usePath } from "../lib/router.ts";
import { session, setStorageName, useSessionKey } from "../lib/session.ts";
import { dateTime } from "../lib/format.ts";
import { ErrorBox, Loading } from "../parts/notices.tsx";
import { MessageView } from "../views/message.tsx";
import { applyBranding, type Branding } from "./branding.ts";
import { publicSession, type PublicSession } from "./public-session.ts";
import { PortalHome } from "./home.tsx";

export type PortalSession = {
  id: string;
  queue_id: string;
  queue_name: string;
  listener_ids: string[] | null;
  can_manage: boolean;
  expires_at: number;
  branding: Branding;
  return_url: string | null;
};

/** Once, before the first render: the session's paths and storage, and the token out of the address bar. */
function boot(): string {
  const id = location.pathname.split("/")[2] ?? ""; // ids are plain ASCII: nothing to decode
  setBase(`/portal/${id}`);
  setStorageName(`fanout.portal.${id}`);
  const fragment = location.hash.slice(1);
  if (fragment) {
    if (fragment.startsWith("fop_")) session.signIn(fragment);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return id;
}

/**
 * Framed, the page tells its parent how tall it is (`{ fanout: "portal-height", height }`), so the parent can size
 * the frame to fit (docs/portal.md). Only the session's allowed origins can frame it, and a height is all it says.
 */
function useHeightMessages(): void {
  useEffect(() => {
    if (window.parent === window) return;
    let last = 0;
    const observer = new ResizeObserver(() => {
      const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (height !== last) window.parent.postMessage({ fanout: "portal-height", height: (last = height) }, "*");
    });
    observer.observe(document.body);
    return () => observer.disconnect();
  }, []);
}

export function PortalApp() {
  const [id] = useState(boot);
  useHeightMessages();
  const token = useSessionKey();
  if (!token) return <Ended id={id} />;
  return <Portal id={id} />;
}

function Portal({ id }: { id: string }) {
  const [state, setState] = useState<{ session?: PortalSession; error?: ApiError }>({});
  const { path } = usePath();
  useEffect(() => {
    get<{ portal_session: PortalSession }>(`/v1/portal_sessions/${encodeURIComponent(id)}`).then(
      (b) => (applyBranding(b.portal_session.branding), setState({ session: b.portal_session })),
      (error) => setState({ error: asApiError(error) }),
    );
  }, [id]);
  const s = state.session;
  if (!s) {
    return (
      <main class="main portal-main">
        {state.error ? <ErrorBox error={state.error} context="The portal could not be opened" /> : <Loading what="the portal" />}
      </main>
    );
  }
  const message = match("/queues/:q/messages/:m", path);
  const queue = { id: s.queue_id, name: s.queue_name, schema: null, schema_id: null };
  return (
    <PortalShell branding={s.branding} returnUrl={s.return_url}>
      {message?.q === s.queue_id ? <MessageView queue={queue} messageId={message.m!} /> : <PortalHome session={s} queue={queue} />}
      <p class="portal-expiry muted small">This link works until {dateTime(s.expires_at)}.</p>
    </PortalShell>
  );
}

function PortalShell({ branding, returnUrl, children }: { branding: Branding; returnUrl: string | null; children: ComponentChildren }) {
  return (
    <>
      <header class="portal-bar">
        <div class="portal-bar-inner">
          <span class="portal-brand">
            {branding.logo_url && <img class="portal-logo" src={branding.logo_url} alt="" />}
            <span>{branding.name ?? "Webhooks"}</span>
          </span>
          {returnUrl && <a class="portal-return" href={returnUrl} target="_top" rel="noopener">← Back</a>}
        </div>
      </header>
      <main class="main portal-main">{children}</main>
    </>
  );
}

const ENDED: Record<string, [string, string]> = {
  expired: ["This link has expired", "Links to this page work for a limited time. Go back and open it again to get a new one."],
  revoked: ["This link was revoked", "It no longer opens this page. Go back and open it again to get a new one."],
  active: ["This link is incomplete", "It lacks the part after the # sign. Open it again from where you found it."],
  unknown: ["This link is not valid", "There is no such page, or it was removed. Go back and open it again to get a new one."],
};

/** Without a working token: why, in words, and the way back when the session names one. */
function Ended({ id }: { id: string }) {
  const [state, setState] = useState<{ loaded: boolean; session: PublicSession | null; error?: string }>({ loaded: false, session: null });
  useEffect(() => {
    publicSession(id).then(
      (s) => (applyBranding(s?.branding ?? null), setState({ loaded: true, session: s })),
      (e) => setState({ loaded: true, session: null, error: String(e?.message ?? e) }),
    );
  }, [id]);
  if (!state.loaded) return <main class="main portal-main"><Loading what="the portal" /></main>;
  const s = state.session;
  // A token the server refused while its portal session is active is not that link's token: the link was altered.
  const status = s ? (s.status === "active" && session.endedBecause() ? "unknown" : s.status) : "unknown";
  const [title, text] = ENDED[status]!;
  return (
    <PortalShell branding={s?.branding ?? { name: null, logo_url: null, accent: null }} returnUrl={null}>
      <section class="card portal-ended" role="status">
        <h1>{title}</h1>
        <p>{state.error ? `The page could not be loaded: ${state.error}` : text}</p>
        {s?.return_url && <a class="btn btn-primary" href={s.return_url} target="_top" rel="noopener">Go back</a>}
      </section>
    </PortalShell>
  );
}
