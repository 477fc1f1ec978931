/**
 * Trying a filter before saving it: against one message given in the request, or against the queue's newest
 * stored messages, so a user sees what a listener with it would receive (docs/api.md, "Filters").
 */
import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope } from "../../http/scopes.ts";
import { unprocessable } from "../../lib/errors.ts";
import { compileFilter, matches, subjectOf } from "../../lib/filter.ts";
import type { Message } from "../../store/index.ts";

/** The newest stored messages a filter is tried against. */
export const FILTER_TEST_MESSAGES = 100;

export type FilterTest = { filter: Record<string, unknown>; message?: { name?: string | null; data?: unknown } };
export type FilterTestResult = { matches: boolean } | { matched: number; of: number };

export async function testFilter(deps: Deps, auth: Auth, queueId: string, body: FilterTest): Promise<FilterTestResult> {
  requireScope(auth.key, "listeners", "read", [queueId]);
  await deps.store.queues.get(auth.orgId, queueId);
  const compiled = compileFilter(body.filter, "/filter");
  if (!compiled.ok) throw unprocessable("The filter is not valid.", compiled.errors);
  if (body.message) return { matches: matches(compiled.filter, subjectOf(body.message.name ?? null, body.message.data ?? null)) };
  const items = await newestMessages(deps, auth, queueId);
  const matched = items.filter((m) => matches(compiled.filter, subjectOf(m.name, m.data))).length;
  return { matched, of: items.length };
}

/**
 * The messages a filter is tried against. A portal token counts only what its session's listeners received:
 * counting matches among other customers' messages would tell what they hold (docs/portal.md).
 */
async function newestMessages(deps: Deps, auth: Auth, queueId: string): Promise<Message[]> {
  const portal = auth.key.portal;
  if (portal) return deps.store.messages.received(auth.orgId, queueId, portal.listenerIds, FILTER_TEST_MESSAGES);
  const { total } = await deps.store.messages.list(auth.orgId, { queueId, visible: "all" }, { offset: 0, limit: 1 });
  const offset = Math.max(0, total - FILTER_TEST_MESSAGES);
  return (await deps.store.messages.list(auth.orgId, { queueId, visible: "all" }, { offset, limit: FILTER_TEST_MESSAGES })).items;
}
