/**
 * LISTEN/NOTIFY channels between instances. A notification is sent by the statement or transaction whose commit
 * it announces, so it arrives after that commit and never for a rollback.
 * - WAKE: a publish wrote deliveries; every instance's delivery worker looks for due rows now. Payload: the
 *   sending instance, whose own worker was already nudged directly.
 * - CHANGES: something instances keep in memory changed elsewhere: an API key (caches) or a locked-out address.
 * Notifications sent while a listener is reconnecting are lost, so every (re-)subscription is followed by a poll.
 */
export const WAKE_CHANNEL = "fanout_wake";
export const CHANGES_CHANNEL = "fanout_changes";

export type Change = { kind: "keys" } | { kind: "lock"; address: string; until: number };
