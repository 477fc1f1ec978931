/**
 * The API key of this tab. It lives in sessionStorage only: gone when the tab closes, never in
 * localStorage or a cookie, and sent only as the X-API-KEY header of the dashboard's own /v1 calls.
 */
import { useEffect, useState } from "preact/hooks";

const STORAGE = "fanout.apiKey";
const listeners = new Set<() => void>();
/** Why the sign-in ended, when the server ended it (a key refused with 401 while in use). */
let endedBecause: string | null = null;

function read(): string | null {
  try {
    return sessionStorage.getItem(STORAGE);
  } catch {
    return null; // storage blocked by the browser: the person signs in again on each load
  }
}

function changed(): void {
  for (const listener of listeners) listener();
}

export const session = {
  key: read,
  signIn(key: string): void {
    sessionStorage.setItem(STORAGE, key);
    endedBecause = null;
    changed();
  },
  signOut(reason: string | null = null): void {
    sessionStorage.removeItem(STORAGE);
    endedBecause = reason;
    changed();
  },
  endedBecause: () => endedBecause,
};

/** The current key; components re-render when it changes. */
export function useSessionKey(): string | null {
  const [key, setKey] = useState(read);
  useEffect(() => {
    const update = () => setKey(read());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return key;
}
