/**
 * A database that a newer fanout migrated carries migrations this binary does not know: its code would read and
 * write a schema it was not written for, silently. Both backends' migrators look for such migrations before they
 * apply or write anything, and refuse the database with one line that names both versions and the way back.
 *
 * A migration is unknown when drizzle's bookkeeping row for it is dated after the newest migration embedded here
 * (drizzle orders and skips migrations by that date too). Each row this fanout writes also records which fanout
 * applied it (`fanout_version`, a column beside drizzle's own), so the refusal can name the newer one.
 */
import { fullVersion } from "../version.ts";

/**
 * A bookkeeping row as read with `SELECT *`: `fanout_version` names the fanout that applied the migration, and is
 * missing where no fanout has added the column yet.
 */
export type AppliedRow = { created_at: unknown; fanout_version?: string | null };

/** Thrown before anything is written; main.ts prints its message as the one line of a start that exits 2. */
export class DatabaseTooNew extends Error {}

/**
 * Throws DatabaseTooNew when `newer` (the rows dated after this binary's newest migration, newest first) is not
 * empty. `where` names the database for the message.
 */
export function refuseNewer(where: string, newer: AppliedRow[]): void {
  if (newer.length === 0) return;
  const by = newer.find((row) => row.fanout_version)?.fanout_version;
  const migratedBy = by ? `fanout ${by}, newer than this fanout ${fullVersion()}` : `a fanout newer than this one, ${fullVersion()}`;
  const unknown = newer.length === 1 ? "1 of its migrations is" : `${newer.length} of its migrations are`;
  throw new DatabaseTooNew(
    `the database ${where} was migrated by ${migratedBy}: ${unknown} unknown here; ` +
      "run the newer fanout, or restore a backup taken before the upgrade",
  );
}
