import { render } from "preact";
import { App } from "./app.tsx";

const root = document.getElementById("app")!;
root.textContent = ""; // the loading line shown until the script runs
render(<App />, root);
