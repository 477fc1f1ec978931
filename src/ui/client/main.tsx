import { render } from "preact";
import { App } from "./app.tsx";
import { PortalApp } from "./portal/portal-app.tsx";

const root = document.getElementById("app")!;
root.textContent = ""; // the loading line shown until the script runs
// One bundle: /portal/<session id> is the portal a customer is handed (docs/portal.md), the rest the dashboard.
render(location.pathname.startsWith("/portal/") ? <PortalApp /> : <App />, root);
