/** Which view a path shows; every view but sign-in sits in the shell. */
import { Link, match, usePath } from "./lib/router.ts";
import { useSessionKey } from "./lib/session.ts";
import { Card, PageHeader, Shell } from "./parts/layout.tsx";
import { Empty } from "./parts/notices.tsx";
import { SignIn } from "./views/sign-in.tsx";
import { QueuesView } from "./views/queues.tsx";
import { QueueView, type QueueTab } from "./views/queue.tsx";
import { EventsView } from "./views/events.tsx";
import { KeysView } from "./views/keys.tsx";
import { OrganizationView } from "./views/organization.tsx";

const QUEUE_ROUTES: [string, QueueTab][] = [
  ["/queues/:q", "listeners"],
  ["/queues/:q/messages", "messages"],
  ["/queues/:q/messages/:m", "message"],
  ["/queues/:q/publish", "publish"],
  ["/queues/:q/schema", "schema"],
];

function view(path: string) {
  if (path === "/" || path === "/queues") return <QueuesView />;
  if (path === "/events") return <EventsView />;
  if (path === "/keys") return <KeysView />;
  if (path === "/organization") return <OrganizationView />;
  for (const [pattern, tab] of QUEUE_ROUTES) {
    const params = match(pattern, path);
    if (params) return <QueueView key={params.q} queueId={params.q!} tab={tab} messageId={params.m} />;
  }
  return (
    <>
      <PageHeader title="Page not found" />
      <Card>
        <Empty title="There is no such page in the dashboard.">
          The link may be old or mistyped. <Link to="/queues">Go to the queues</Link>.
        </Empty>
      </Card>
    </>
  );
}

export function App() {
  const key = useSessionKey();
  const { path } = usePath();
  if (!key) return <SignIn />;
  return <Shell path={path}>{view(path)}</Shell>;
}
