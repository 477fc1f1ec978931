/**
 * The rules a new portal session keeps (docs/portal.md), each broken one named in the 422: who may embed it,
 * how it looks, where it links back to, and for how long it works.
 */
import { unprocessable, type FieldError } from "../../lib/errors.ts";
import type { NewPortalSession } from "../../store/index.ts";

export const EXPIRES_IN = { min: 60, max: 86_400, fallback: 3_600 };
export const MAX_LISTENER_IDS = 100;
export const MAX_ORIGINS = 10;
export const MAX_NAME = 60;
export const MAX_LOGO_BYTES = 64 * 1024;
const MAX_URL = 2048;

export type PortalSessionCreate = {
  queue_id: string;
  listener_ids?: string[];
  can_manage?: boolean;
  expires_in?: number;
  allowed_origins?: string[];
  branding?: { name?: string; logo_url?: string; accent?: string };
  return_url?: string;
};

const HOST_NAME = /^([a-z0-9-]+\.)*[a-z0-9-]+$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;
const isLoopback = (host: string) => host === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(host) || host === "[::1]";

/** The origin `text` names (scheme, host and port; nothing more), or null: https, or http on loopback only. */
export function embeddingOrigin(text: string): string | null {
  if (!URL.canParse(text)) return null;
  const u = new URL(text);
  if (u.username || u.password || u.pathname !== "/" || u.search || u.hash || text.includes("?") || text.includes("#")) return null;
  // No wildcard and nothing else a Content-Security-Policy source would read as more than one origin.
  if (!HOST_NAME.test(u.hostname) && !IPV6.test(u.hostname)) return null;
  if (u.protocol === "https:" || (u.protocol === "http:" && isLoopback(u.hostname))) return u.origin;
  return null;
}

const httpsUrl = (text: string) => text.length <= MAX_URL && URL.canParse(text) && /^https:\/\/[^/?#\s]/i.test(text) && !new URL(text).username;

const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp|avif|svg\+xml)(;[a-z-]+=[^;,]*)*(;base64)?,(.*)$/is;

/** The bytes of a data: URL's image, or null when it is not one. */
function dataImageBytes(text: string): number | null {
  const m = DATA_IMAGE.exec(text);
  if (!m) return null;
  const payload = m[4]!;
  if (m[3]) return /^[A-Za-z0-9+/]*={0,2}$/.test(payload) ? Math.floor((payload.length * 3) / 4) - (payload.match(/=*$/)![0].length) : null;
  try {
    return Buffer.byteLength(decodeURIComponent(payload));
  } catch {
    return null; // a malformed percent escape: not an image URL
  }
}

function logoProblem(text: string): string | null {
  if (text.startsWith("data:")) {
    const bytes = dataImageBytes(text);
    if (bytes === null) return `must be an https URL or a data: URL of an image of at most ${MAX_LOGO_BYTES / 1024} KB`;
    return bytes > MAX_LOGO_BYTES ? `is ${bytes} bytes; an image may be at most ${MAX_LOGO_BYTES / 1024} KB` : null;
  }
  return httpsUrl(text) ? null : "must be an https URL or a data: URL of an image";
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** Every problem of the body; an empty list when it may be stored. */
function problems(body: PortalSessionCreate): FieldError[] {
  const errors: FieldError[] = [];
  const ids = body.listener_ids ?? [];
  if (ids.length > MAX_LISTENER_IDS) errors.push({ path: "/listener_ids", message: `must hold at most ${MAX_LISTENER_IDS} ids` });
  ids.forEach((id, i) => ids.indexOf(id) !== i && errors.push({ path: `/listener_ids/${i}`, message: "is named twice" }));
  const expires = body.expires_in ?? EXPIRES_IN.fallback;
  if (expires < EXPIRES_IN.min || expires > EXPIRES_IN.max) errors.push({ path: "/expires_in", message: `must be from ${EXPIRES_IN.min} to ${EXPIRES_IN.max} seconds` });
  const origins = body.allowed_origins ?? [];
  if (origins.length > MAX_ORIGINS) errors.push({ path: "/allowed_origins", message: `must hold at most ${MAX_ORIGINS} origins` });
  origins.forEach((o, i) => {
    if (!embeddingOrigin(o)) errors.push({ path: `/allowed_origins/${i}`, message: "must be an origin (scheme, host, port): https, or http on a loopback host" });
  });
  const { name, logo_url, accent } = body.branding ?? {};
  if (name !== undefined && (name.length < 1 || [...name].length > MAX_NAME || CONTROL.test(name))) {
    errors.push({ path: "/branding/name", message: `must be 1 to ${MAX_NAME} characters without control characters` });
  }
  const logo = logo_url === undefined ? null : logoProblem(logo_url);
  if (logo) errors.push({ path: "/branding/logo_url", message: logo });
  if (accent !== undefined && !/^#[0-9a-fA-F]{6}$/.test(accent)) errors.push({ path: "/branding/accent", message: "must be a colour written #rrggbb" });
  if (body.return_url !== undefined && !httpsUrl(body.return_url)) errors.push({ path: "/return_url", message: "must be an https URL" });
  return errors;
}

/** The session as the store takes it, without its token; 422 with every problem. */
export function checkedSession(body: PortalSessionCreate, now: number): Omit<NewPortalSession, "tokenHash"> {
  const errors = problems(body);
  if (errors.length) throw unprocessable("The portal session cannot be made.", errors);
  const origins = (body.allowed_origins ?? []).map((o) => embeddingOrigin(o)!);
  return {
    queueId: body.queue_id,
    listenerIds: body.listener_ids ?? null,
    canManage: body.can_manage ?? true,
    allowedOrigins: [...new Set(origins)],
    branding: { name: body.branding?.name ?? null, logoUrl: body.branding?.logo_url ?? null, accent: body.branding?.accent?.toLowerCase() ?? null },
    returnUrl: body.return_url ?? null,
    expiresAt: now + (body.expires_in ?? EXPIRES_IN.fallback) * 1000,
  };
}
