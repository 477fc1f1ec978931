// A stand-in delivery worker for supervisor.test.ts: it reports the start message it got, then dies.
import type { FromWorker, ToWorker } from "../protocol.ts";

declare var self: Worker;

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type !== "start") return;
  const report: FromWorker = { type: "log", level: "info", msg: "started", fields: { owner: m.owner, release: m.releaseOwners.join(",") } };
  self.postMessage(report);
  setTimeout(() => process.exit(3), 10);
};
