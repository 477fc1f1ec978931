/**
 * Events older than 24 hours are not kept, nor are Idempotency-Key records (docs/delivery.md, docs/api.md), nor
 * portal sessions a week after they expired (docs/portal.md): a timer deletes them. Reads already ignore them, so the sweep only bounds the tables; the store deletes in small
 * batches so a large backlog never stalls writers. Instances sharing a PostgreSQL database take turns
 * (`store.leads`): one sweeps, and another takes over within one interval when it dies.
 */
import type { Store } from "../../store/index.ts";
import type { Clock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/log.ts";
import { EVENT_RETENTION_MS } from "./service.ts";
import { StorageUnavailable } from "../../lib/errors.ts";
import { IDEMPOTENCY_WINDOW_MS } from "../../http/idempotency.ts";
import { PORTAL_SESSION_RETENTION_MS } from "../portal-sessions/service.ts";

export const SWEEP_EVERY_MS = 60_000;

/**
 * Sweeps once now and then every `everyMs`; runs never overlap. Returns the stop function, whose promise settles
 * when a sweep in progress has finished, so the caller can close the store after it.
 */
export function startEventSweep(store: Store, clock: Clock, log: Logger, everyMs = SWEEP_EVERY_MS): () => Promise<void> {
  let running: Promise<void> | null = null;
  const sweep = () => (running ??= sweepOnce().finally(() => (running = null)));
  const sweepOnce = async () => {
    if (store.leads && !(await store.leads())) return; // another instance sweeps
    try {
      const deleted = await store.events.sweep(clock.now() - EVENT_RETENTION_MS);
      if (deleted) log.info("swept old usage events", { deleted });
    } catch (e) {
      // A failed sweep only delays cleanup (listing filters by age anyway); the next tick tries again. A database
      // that cannot be written is logged by the store, once.
      if (!(e instanceof StorageUnavailable)) log.error("sweeping usage events failed", { error: String(e) });
    }
    try {
      const deleted = await store.idempotency.sweep(clock.now() - IDEMPOTENCY_WINDOW_MS);
      if (deleted) log.info("swept expired idempotency keys", { deleted });
    } catch (e) {
      // As above: lookups ignore expired keys.
      if (!(e instanceof StorageUnavailable)) log.error("sweeping idempotency keys failed", { error: String(e) });
    }
    try {
      const deleted = await store.portalSessions.sweep(clock.now() - PORTAL_SESSION_RETENTION_MS);
      if (deleted) log.info("swept ended portal sessions", { deleted });
    } catch (e) {
      // As above: an ended session's token is refused whether its row is there or not.
      if (!(e instanceof StorageUnavailable)) log.error("sweeping portal sessions failed", { error: String(e) });
    }
  };
  void sweep();
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
