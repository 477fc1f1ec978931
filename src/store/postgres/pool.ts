/**
 * How one instance divides `--db-pool` connections: the delivery thread's pool, one session each thread reserves
 * for its leader lock (leader.ts), and the rest for the API thread's queries. Each thread's LISTEN connection is
 * opened by the driver beyond these.
 */
export const WORKER_POOL = 2;
const LEADER_SESSIONS = 2;

export const apiPool = (total: number) => Math.max(1, total - WORKER_POOL - LEADER_SESSIONS);
