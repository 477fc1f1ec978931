/**
 * Lockout counts in the database (auth_failures), shared by every instance: the same rule as the in-process
 * count (http/lockout.ts), `attempts` failures from one address within a window that starts at its first failure
 * lock the address for `lockMs`, and a lock starts the count afresh. One statement counts the failure, tidies a
 * few rows nobody needs any more (so an attack from many addresses leaves no table behind), and, when this
 * failure locked the address, tells the other instances (CHANGES, notifications.ts), which refuse it from then on
 * without asking the database on every request.
 */
import type { SQL } from "bun";
import { num } from "./client.ts";
import { guarded } from "./errors.ts";
import { positional } from "./delivery-sql.ts";
import { CHANGES_CHANNEL } from "./notifications.ts";
import type { LockoutStore } from "../index.ts";

/** Expired rows removed by each failure: a few, so the counting statement stays short. */
const TIDY = 10;
const COUNT = "CASE WHEN $now - f.since < $window THEN f.count + 1 ELSE 1 END";

const FAIL = positional(`
WITH tidied AS (
  DELETE FROM auth_failures WHERE ctid = ANY(ARRAY(SELECT ctid FROM auth_failures
    WHERE since < $now - $window AND coalesce(locked_until, 0) < $now AND address <> $address LIMIT ${TIDY}))
),
counted AS (
  INSERT INTO auth_failures AS f (address, since, count, locked_until)
  VALUES ($address, $now, 1, CASE WHEN $attempts <= 1 THEN $now + $lock END)
  ON CONFLICT (address) DO UPDATE SET
    since = CASE WHEN ${COUNT} >= $attempts THEN $now WHEN $now - f.since < $window THEN f.since ELSE $now END,
    count = CASE WHEN ${COUNT} >= $attempts THEN 0 ELSE ${COUNT} END,
    locked_until = CASE WHEN ${COUNT} >= $attempts THEN $now + $lock ELSE f.locked_until END
  RETURNING locked_until
)
SELECT CASE WHEN locked_until = $now + $lock THEN locked_until ELSE 0 END AS until,
  CASE WHEN locked_until = $now + $lock
    THEN pg_notify('${CHANGES_CHANNEL}', json_build_object('kind', 'lock', 'address', $address::text, 'until', locked_until)::text) END AS told
FROM counted`, ["address", "now", "window", "attempts", "lock"]);

export type LockWatchers = { locked(address: string, until: number): void; resync(): void }[];

/** `subscribe` starts the process's CHANGES subscription (index.ts), which hands locks to `watchers`. */
export function lockoutStore(client: SQL, watchers: LockWatchers, subscribe: () => Promise<void>): LockoutStore {
  return {
    fail: (address, rule, now) =>
      guarded(async () => {
        const [row] = await client.unsafe(FAIL, [address, now, rule.windowMs, rule.attempts, rule.lockMs]);
        return num(row.until);
      }),
    locked: (now) =>
      guarded(async () => {
        const rows = await client`SELECT address, locked_until FROM auth_failures WHERE locked_until > ${now}`;
        return rows.map((r: { address: string; locked_until: string }) => ({ address: r.address, until: num(r.locked_until) }));
      }),
    async watch(handlers) {
      watchers.push(handlers);
      await subscribe();
    },
  };
}
