/**
 * What the portal page reads before it holds a token, and after one is refused: the session's state, branding
 * and return link, from /portal/<id>/session (no key; nothing in it is secret).
 */
import type { Branding } from "./branding.ts";

export type PublicSession = { status: "active" | "expired" | "revoked"; branding: Branding; return_url: string | null };

/** The session, null when there is none with this id; throws when the server cannot be asked. */
export async function publicSession(id: string): Promise<PublicSession | null> {
  const response = await fetch(`/portal/${encodeURIComponent(id)}/session`, { headers: { accept: "application/json" }, cache: "no-store", credentials: "omit" });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`The server answered ${response.status}.`);
  return response.json();
}
