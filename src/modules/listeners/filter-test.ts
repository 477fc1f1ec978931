/**
 * Trying a filter before saving it: against one message given in the request, or against the queue's newest
 * stored messages, so a user sees what a listener with it would receive (docs/api.md, "Filters").
 */
import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope } from "../../http/scopes.ts";
import { unprocessable } from "../../lib/errors.ts";
import { compileFilter, matches, subjectOf } from "../../lib/filter.ts";

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
  const { total } = await deps.store.messages.list(auth.orgId, { queueId, visible: "all" }, { offset: 0, limit: 1 });
  const offset = Math.max(0, total - FILTER_TEST_MESSAGES);
  const { items } = await deps.store.messages.list(auth.orgId, { queueId, visible: "all" }, { offset, limit: FILTER_TEST_MESSAGES });
  const matched = items.filter((m) => matches(compiled.filter, subjectOf(m.name, m.data))).length;
  return { matched, of: items.length };
}
