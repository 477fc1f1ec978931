/**
 * The organization of the signed-in key. The API has no "who am I": the organization's id is read from a usage
 * event (each names its `client`), and only a key that may read the organization (the owner key) gets it back.
 * When no event of the last 24 hours names it, a key that may manage API keys (the owner key again) is told to
 * enter the id itself (`fanout orgs list` prints it).
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, call, enc, get } from "./api.ts";
import { session } from "./session.ts";

export type ApiClient = { id: string; name: string; events_queue_id: string | null };
/** `client` null with `owner` true: the owner key, but no event to learn the id from. */
export type Found = { client: ApiClient | null; owner: boolean };

const found = new Map<string, Promise<Found>>();

/** A refusal (401, 403, 404) is an answer; anything else (no network, 5xx) is asked again next time. */
const refused = (error: unknown) => error instanceof ApiError && error.status >= 400 && error.status < 500;

async function find(): Promise<Found> {
  const events = await get<{ events: { client: { id: string } }[] }>("/v1/events?limit=1").catch((e) => {
    if (refused(e)) return { events: [] };
    throw e;
  });
  const id = events.events[0]?.client.id;
  if (id) return readClient(id).then((client) => ({ client, owner: true }), (e) => (refused(e) ? { client: null, owner: false } : Promise.reject(e)));
  const owner = await call("GET", "/v1/api_keys?per_page=1").then(() => true, (e) => (refused(e) ? false : Promise.reject(e)));
  return { client: null, owner };
}

export const readClient = (id: string) => get<{ api_client: ApiClient }>(`/v1/api_clients/${enc(id)}`).then((b) => b.api_client);

/** Once per key and tab; `retry` changes on navigation, so a lookup that failed for want of a network runs again. */
export function useOrganization(retry?: unknown): Found | null {
  const key = session.key() ?? "";
  const [result, setResult] = useState<Found | null>(null);
  useEffect(() => {
    let live = true;
    let pending = found.get(key);
    if (!pending) {
      pending = find();
      found.set(key, pending);
      pending.catch(() => found.delete(key));
    }
    // A failed lookup shows nothing now; the entry is gone and the next navigation asks again.
    pending.then((r) => live && setResult(r), () => undefined);
    return () => void (live = false);
  }, [key, retry]);
  return result;
}

/** The view learnt the id or saved a change: later lookups in this tab start from it. */
export function remember(client: ApiClient): void {
  found.set(session.key() ?? "", Promise.resolve({ client, owner: true }));
}
