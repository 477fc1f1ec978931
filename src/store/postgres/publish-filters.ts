/**
 * Filters at the publish (docs/api.md, "Filters"). On PostgreSQL a publish writes its deliveries itself, in one
 * statement for a batch (publish.ts), which cannot run a filter: the publisher judges the message against its
 * queue's filtered listeners first, from a cache, and tells the statement which listeners it judged, at which
 * revision of their filter, and which ones took the message. The statement locks the listeners it fans out to
 * and refuses a publish judged against another revision (a filter changed, a filtered listener added, on any
 * instance); then the cache forgets the queue and the publish is judged again. The cache needs no other news.
 * The judging happens when the batch is made (publish.ts), so publishes keep the order they were called in.
 */
import type { SQL } from "bun";
import { compileFilter, matches, subjectOf, type CompiledFilter } from "../../lib/filter.ts";
import { FiltersChanged } from "../../lib/errors.ts";
import type { PublishedMessage } from "../index.ts";
import type { Publish, Routing } from "./publish.ts";
import { lookupId } from "./text.ts";

type Filtered = { seq: number; rev: number; filter: CompiledFilter | null };

const MAX_QUEUES = 10_000;
/** A queue whose filters change on every publish is refused after this many judgements, with a 503 to retry. */
const TRIES = 4;

export class FilterCache {
  private readonly queues = new Map<string, Promise<Filtered[]>>();

  constructor(private readonly client: SQL) {}

  get(queueId: string): Promise<Filtered[]> {
    let entry = this.queues.get(queueId);
    if (!entry) {
      if (this.queues.size >= MAX_QUEUES) this.queues.clear();
      entry = this.load(queueId);
      entry.catch(() => this.queues.delete(queueId));
      this.queues.set(queueId, entry);
    }
    return entry;
  }

  forget(queueId: string): void {
    this.queues.delete(queueId);
  }

  private async load(queueId: string): Promise<Filtered[]> {
    const rows: { seq: string | number; rev: string | number; filter: string }[] = await this.client
      .unsafe("SELECT seq, filter_rev AS rev, filter FROM listeners WHERE queue_id = $1 AND filter IS NOT NULL", [lookupId(queueId)]);
    return rows.map((r) => {
      const compiled = compileFilter(JSON.parse(r.filter));
      // A stored filter was checked when saved; one a tightened rule refuses now takes nothing.
      return { seq: Number(r.seq), rev: Number(r.rev), filter: compiled.ok ? compiled.filter : null };
    });
  }
}

/** The routing of one message: every filtered listener judged, and those whose filter took it. */
export function routeOf(filtered: Filtered[], p: Pick<Publish, "name" | "data" | "value">): Routing {
  if (filtered.length === 0) return { considered: [], matched: [] };
  const subject = subjectOf(p.name, p.value !== undefined ? p.value : JSON.parse(p.data));
  return {
    considered: filtered.map((f) => ({ seq: f.seq, rev: f.rev })),
    matched: filtered.filter((f) => f.filter !== null && matches(f.filter, subject)).map((f) => f.seq),
  };
}

/** Publishes through `batched` (the writer's next batch), again while the filters it was judged on keep changing. */
export function filteredPublish(cache: FilterCache, batched: (p: Publish) => Promise<PublishedMessage>) {
  return async (p: Publish): Promise<PublishedMessage> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await batched(p);
      } catch (e) {
        if (!(e instanceof FiltersChanged) || attempt === TRIES) throw e;
        cache.forget(p.queueId);
      }
    }
  };
}
