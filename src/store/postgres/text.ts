/**
 * PostgreSQL text cannot hold U+0000 (a statement carrying one fails), where SQLite stores it. Such a character
 * reaches the store only from outside: a receiver's response body, or an id a request names (`/queues/%00`).
 */

/** Text to store, U+0000 kept as U+FFFD. */
export const storable = (s: string | null) => (s === null || !s.includes("\u0000") ? s : s.replaceAll("\u0000", "\uFFFD"));

/** An id to look up: with U+0000 replaced it matches nothing, as no id holds one, instead of failing the statement. */
export const lookupId = (id: string) => storable(id)!;
