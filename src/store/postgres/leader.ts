/**
 * Periodic work runs on one instance at a time: the one whose reserved session holds the task's advisory lock.
 * Every process asks `lead()` before each round of that work; the holder keeps its lock as long as its session
 * lives, and the others try to take it each time they ask, so when the holder dies (its session ends with it) the
 * next one to ask takes over within one interval of the work. The lock lives on one reserved connection of a
 * client of its own: taken through a pool it would land on any connection, and its unlock on another.
 *
 * A session that broke (the server restarted) lost the lock: `lead()` answers false, drops it, and the next call
 * reserves a new one. It never throws: a database that cannot be reached means "not leading".
 */
import type { ReservedSQL, SQL } from "bun";
import { openClient } from "./client.ts";
import { LOCK_NAMESPACE } from "./locks.ts";
import type { PostgresTarget } from "./url.ts";

export class Leadership {
  private readonly client: SQL;
  private session: ReservedSQL | null = null;
  private held = false;
  private asking: Promise<boolean> | null = null;

  constructor(target: PostgresTarget, private readonly lock: number, role: string) {
    // The pid in the session's name tells an operator (pg_stat_activity) which instance leads.
    this.client = openClient(target, 1, `${role} leader, pid ${process.pid}`);
  }

  /** Whether this process leads now; takes the lock when it is free. Concurrent calls share one answer. */
  lead(): Promise<boolean> {
    this.asking ??= this.ask().finally(() => (this.asking = null));
    return this.asking;
  }

  private async ask(): Promise<boolean> {
    try {
      this.session ??= await this.client.reserve();
      if (this.held) await this.session`SELECT 1`; // still alive, so still holding it
      else [{ ok: this.held }] = await this.session`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, ${this.lock}) AS ok`;
      return this.held;
    } catch {
      // The session broke and its lock with it; a new one is reserved at the next call.
      this.held = false;
      const broken = this.session;
      this.session = null;
      await broken?.close().catch(() => {}); // already closed by the failure, most likely
      return false;
    }
  }

  /**
   * Gives the lock up, so another instance takes over at its next ask: unlocked first, since the server ends a
   * closed session (and frees its locks) only a moment after the client has gone.
   */
  async close(): Promise<void> {
    await this.asking;
    const session = this.session;
    this.session = null;
    if (session && this.held) await session`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${this.lock})`.catch(() => {}); // broken: already freed
    this.held = false;
    await session?.close().catch(() => {}); // a broken session is closed already
    await this.client.close();
  }
}
