import { moduleRoutes } from "../module-routes.ts";
import { apiContext, type Deps } from "../../http/context.ts";
import { link, type Links } from "../../http/links.ts";
import { splitUrl } from "../../http/request-url.ts";
import { usageEventView } from "../../store/event-view.ts";
import { EventsQuery, EventsResponse } from "./model.ts";
import * as service from "./service.ts";

/** `self` repeats the request's query; `next` keeps it and moves the cursor to the page's last event. */
function eventLinks(origin: string, request: Request, page: service.EventsPage): Links {
  const query = new URLSearchParams(splitUrl(request.url).search);
  const at = (q: URLSearchParams) => link(origin, `/events${q.size ? `?${q}` : ""}`);
  const _links: Links = { self: at(query) };
  const last = page.events.at(-1);
  if (page.more && last) {
    const next = new URLSearchParams(query);
    next.set("startAfter", String(last.storedAt));
    next.set("startAfterId", last.id);
    _links.next = at(next);
  }
  return _links;
}

export function eventRoutes(deps: Deps) {
  return moduleRoutes("events")
    .use(apiContext(deps))
    .get(
      "/events",
      async ({ auth, query, origin, request, now }) => {
        const page = await service.listEvents(deps, auth, query, now);
        return { events: page.events.map(usageEventView), _links: eventLinks(origin, request, page) };
      },
      {
        query: EventsQuery,
        response: EventsResponse,
        detail: { summary: "Usage events of the last 24 hours, oldest first, paged by startAfter and startAfterId", tags: ["events"] },
      },
    );
}
