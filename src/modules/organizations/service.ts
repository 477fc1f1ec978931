/**
 * API clients, i.e. organizations. A key addresses only its own organization:
 * any other id, existing or not, is 404, so one organization cannot probe for another's ids.
 */
import type { Deps } from "../../http/context.ts";
import type { Auth } from "../../http/auth.ts";
import { requireScope } from "../../http/scopes.ts";
import { notFound, unprocessable } from "../../lib/errors.ts";
import { isOrgName } from "../../config.ts";
import type { Org } from "../../store/index.ts";

export type ApiClientBody = { name?: string; id?: string; events_queue_id?: string | null };

async function ownOrg(deps: Deps, auth: Auth, id: string): Promise<Org> {
  if (id !== auth.orgId) throw notFound("The api client");
  return deps.store.orgs.get(auth.orgId);
}

export async function getApiClient(deps: Deps, auth: Auth, id: string): Promise<Org> {
  requireScope(auth.key, "api_clients", "read", [id]);
  return ownOrg(deps, auth, id);
}

/** Ids are assigned by the service and immutable: a body `id` may only repeat the path's. */
export async function updateApiClient(deps: Deps, auth: Auth, id: string, body: ApiClientBody, now: number): Promise<Org> {
  requireScope(auth.key, "api_clients", "write", [id]);
  const current = await ownOrg(deps, auth, id);
  if (body.id !== undefined && body.id !== id) {
    throw unprocessable("The id in the body differs from the one in the path; ids cannot be changed.", [{ path: "/id", message: "must equal the path's id" }]);
  }
  if (body.name !== undefined && !isOrgName(body.name)) {
    throw unprocessable("Organization names are lowercase reverse domain notation, e.g. com.example.team.", [
      { path: "/name", message: "at least two dot-separated labels of a-z, 0-9 and -, each starting with a letter or digit, at most 253 characters" },
    ]);
  }
  return deps.store.orgs.update(auth.orgId, { name: body.name ?? current.name, eventsQueueId: body.events_queue_id }, now, auth.actor);
}
