/**
 * What other instances change that this one keeps in memory (notifications.ts, CHANGES): API keys (the key
 * cache, api-keys.ts) and locked-out addresses (lockouts.ts). Heard from the first key lookup or lockout watcher
 * on, that is in a server; after every (re-)subscription the caches start afresh, since notifications sent
 * meanwhile are lost.
 */
import type { SQL } from "bun";
import { CHANGES_CHANNEL, type Change } from "./notifications.ts";
import type { LockWatchers } from "./lockouts.ts";

export type ChangeFeed = {
  /** Tells the other instances; a failure is ignored: their caches age out by themselves, the change is committed. */
  announce(change: Change): void;
  watchers: LockWatchers;
  /** The key cache to empty on a key change (set once the store has made it). */
  keys?: { forget(): void };
  subscribe(): Promise<void>;
  /** Subscribes unless it is subscribed; a failure is tried again at the next call. */
  start(): void;
};

export function changeFeed(client: SQL): ChangeFeed {
  let subscription: Promise<unknown> | undefined;
  const feed: ChangeFeed = {
    announce: (change) => void client.notify(CHANGES_CHANNEL, JSON.stringify(change)).catch(() => {}),
    watchers: [],
    subscribe: async () => void (await (subscription ??= client.listen(CHANGES_CHANNEL, changed, resubscribed))),
    start: () => {
      if (!subscription) feed.subscribe().catch(() => (subscription = undefined));
    },
  };
  function changed(payload: string) {
    const change = parseChange(payload);
    if (change?.kind === "keys") feed.keys?.forget();
    if (change?.kind === "lock") for (const w of feed.watchers) w.locked(change.address, change.until);
  }
  function resubscribed() {
    feed.keys?.forget();
    for (const w of feed.watchers) w.resync();
  }
  return feed;
}

/** A notification on CHANGES, or null for a payload fanout did not send (a throw here would end the process). */
function parseChange(payload: string): Change | null {
  try {
    const change = JSON.parse(payload) as Change;
    return change?.kind === "keys" || (change?.kind === "lock" && typeof change.address === "string" && Number.isFinite(change.until)) ? change : null;
  } catch {
    return null; // not JSON: not ours
  }
}
