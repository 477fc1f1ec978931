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
import { refreshStatistics, removeDeadRows } from "./maintenance.ts";
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

/**
 * The worker's transitions commit without waiting for the WAL flush (synchronous_commit off): a crash of the
 * PostgreSQL server may take back its last few, which at-least-once allows (a lost claim leaves the row pending, a
 * lost settlement leaves it leased until the lease expires, and it is sent again). Publishes, whose 200 is the
 * promise, keep the server's setting.
 */
const WORKER_SETTINGS = { synchronous_commit: "off", plan_cache_mode: "force_generic_plan" };
/** How often the housekeeping leader looks for stale statistics and dead rows (maintenance.ts). */
const MAINTENANCE_EVERY_MS = 2_000;

export function openWorkerStore(url: string, instance: string): WorkerStore {
  const target = parsePostgresUrl(url);
  const client = openClient(target, WORKER_POOL, "delivery", WORKER_SETTINGS);
  const leadership = new Leadership(target, LOCKS.deliveryHousekeeping, "delivery");
  let maintaining = false;
  const maintenance = setInterval(async () => {
    if (maintaining || !(await leadership.lead())) return;
    maintaining = true;
    // A failure (the database unreachable) waits for the next round; nothing depends on this one.
    const now = Date.now();
    await refreshStatistics(client, now).then(() => removeDeadRows(client, now)).catch(() => []);
    maintaining = false;
  }, MAINTENANCE_EVERY_MS);
  return {
    store: deliveryStore(client),
    lead: () => leadership.lead(),
    async listen(wake, resubscribed) {
      await client.listen(WAKE_CHANNEL, (from) => from !== instance && wake(), resubscribed);
    },
    async close() {
      clearInterval(maintenance);
      await leadership.close();
      await client.close({ timeout: 1 });
    },
  };
}
