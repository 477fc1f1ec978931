/**
 * Advisory lock keys (two-int form: fanout's namespace, then the lock). Session locks are taken on one reserved
 * connection only: through the pool a lock lands on whichever connection runs the query, and its unlock on
 * another (leader.ts, migrations.ts).
 */
export const LOCK_NAMESPACE = 0x66616e6f; // "fano"

export const LOCKS = {
  /** Instances starting together migrate once. */
  migrate: 1,
  /** The delivery worker's periodic work: lease rescue, held-too-long expiry, liveness probes. */
  deliveryHousekeeping: 2,
  /** The API process's periodic work: the usage-events cut-off, old lockout counts. */
  sweeps: 3,
} as const;
