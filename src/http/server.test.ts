import { expect, test } from "bun:test";
import { isUiPath } from "./server.ts";

test("the dashboard's paths are /ui, /ui/… and /ui?…, whatever the origin; nothing else is", () => {
  for (const url of ["https://x/ui", "https://x:8443/ui/", "https://h.example/ui/queues/q_1", "http://[::1]:80/ui?x=1"]) {
    expect({ url, ui: isUiPath(url) }).toEqual({ url, ui: true });
  }
  for (const url of ["https://x/uix", "https://x/v1/ui", "https://x/", "https://x/u", "https://x/v1/queues", "https://ui/v1/queues"]) {
    expect({ url, ui: isUiPath(url) }).toEqual({ url, ui: false });
  }
});
