/**
 * A map per connection that holds only within one write transaction. While a connection holds SQLite's write
 * lock no other writer can change the file, so what a transaction has read can be remembered until it ends;
 * the group commit clears every such map at each BEGIN (conn.ts). Used for the organizations' newest event
 * keys (events.ts), the queues publishes read (queues.ts) and the last message seq given out (fanout.ts).
 */
import type { Database } from "bun:sqlite";

export type TransactionMemo<V> = {
  /** The connection's map, made on first use; conn.ts takes it to clear at each BEGIN. */
  of(sqlite: Database): Map<string, V>;
  /** The map while `sqlite` is in a transaction; none outside one, where nothing may be remembered. */
  during(sqlite: Database): Map<string, V> | undefined;
};

export function transactionMemo<V>(): TransactionMemo<V> {
  const maps = new WeakMap<Database, Map<string, V>>();
  return {
    of(sqlite) {
      const map = maps.get(sqlite) ?? new Map<string, V>();
      maps.set(sqlite, map);
      return map;
    },
    during: (sqlite) => (sqlite.inTransaction ? maps.get(sqlite) : undefined),
  };
}
