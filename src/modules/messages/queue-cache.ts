/**
 * The queues publishers write to, remembered so a publish validates without reading its queue first. A stale
 * entry is harmless: the store reads the queue again inside the publish transaction and refuses data checked
 * against a schema the queue no longer has (SchemaChanged), and the publisher then drops the entry and retries.
 * A deleted queue fails in the store as 404 the same way. A refusal (422) judged on a remembered schema is judged
 * again on a fresh read, since the schema may have been loosened or removed.
 */
import type { Queue, Store } from "../../store/index.ts";

const MAX_ENTRIES = 10_000;

export class QueueCache {
  private readonly entries = new Map<string, Queue>();
  constructor(private readonly store: Store) {}

  /** `cached` tells the caller that a refusal based on this queue must be checked again against a fresh read. */
  async get(orgId: string, queueId: string): Promise<{ queue: Queue; cached: boolean }> {
    const key = `${orgId}/${queueId}`;
    const hit = this.entries.get(key);
    if (hit) return { queue: hit, cached: true };
    const queue = await this.store.queues.get(orgId, queueId);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, queue);
    return { queue, cached: false };
  }

  forget(orgId: string, queueId: string): void {
    this.entries.delete(`${orgId}/${queueId}`);
  }
}
