/**
 * The API key of this tab. It lives in sessionStorage only: gone when the tab closes, never in
 * localStorage or a cookie, and sent only as the X-API-KEY header of the dashboard's own /v1 calls.
 */
import { useEffect, useState } from "preact/hooks";

/** The portal keeps its token under a name of its own (setStorageName), apart from a dashboard key. */
let STORAGE = "fanout.apiKey";
const listeners = new Set<() => void>();
/** Why the sign-in ended, when the server ended it (a key refused with 401 while in use). */
let endedBecause: string | null = null;

/** The key while storage is blocked (some browsers block it in a frame of another site): this page only. */
let memory: string | null = null;

function read(): string | null {
  try {
    return sessionStorage.getItem(STORAGE) ?? memory;
  } catch {
    return memory; // storage blocked by the browser: the person signs in again on each load
  }
}

function store(change: (s: Storage) => void): void {
  try {
    change(sessionStorage);
  } catch {
    // blocked: the key is kept in `memory` alone
  }
}

function changed(): void {
  for (const listener of listeners) listener();
}

export function setStorageName(name: string): void {
  STORAGE = name;
}

export const session = {
  key: read,
  signIn(key: string): void {
    memory = key;
    store((s) => s.setItem(STORAGE, key));
    endedBecause = null;
    changed();
  },
  signOut(reason: string | null = null): void {
    memory = null;
    store((s) => s.removeItem(STORAGE));
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
