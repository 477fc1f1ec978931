/**
 * The delivery worker's own connections to PostgreSQL: its DeliveryStore on a small pool, the leader lock of the
 * delivery housekeeping (leader.ts), and the wake channel (notifications.ts). Publishes on any instance wake this
 * worker through NOTIFY; its own process's publishes nudge it directly, so their notifications are ignored.
 */
import { openClient } from "./client.ts";
import { deliveryStore } from "./deliveries.ts";
import { Leadership } from "./leader.ts";
import { LOCKS } from "./locks.ts";
import { WAKE_CHANNEL } from "./notifications.ts";
import { WORKER_POOL } from "./pool.ts";
import { parsePostgresUrl } from "./url.ts";
import type { DeliveryStore } from "../deliveries.ts";

export type WorkerStore = {
  store: DeliveryStore;
  lead(): Promise<boolean>;
  /**
   * Calls `wake` on another instance's publish, and `resubscribed` each time LISTEN is (re-)established:
   * notifications sent while it was down are lost, so the caller polls then.
   */
  listen(wake: () => void, resubscribed: () => void): Promise<void>;
  close(): Promise<void>;
};

export function openWorkerStore(url: string, instance: string): WorkerStore {
  const target = parsePostgresUrl(url);
  const client = openClient(target, WORKER_POOL, "delivery");
  const leadership = new Leadership(target, LOCKS.deliveryHousekeeping, "delivery");
  return {
    store: deliveryStore(client),
    lead: () => leadership.lead(),
    async listen(wake, resubscribed) {
      await client.listen(WAKE_CHANNEL, (from) => from !== instance && wake(), resubscribed);
    },
    async close() {
      await leadership.close();
      await client.close({ timeout: 1 });
    },
  };
}
