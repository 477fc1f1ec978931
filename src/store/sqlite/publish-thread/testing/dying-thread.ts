// Tests only: the real publish thread, except that a batch holding a publish named "die" ends the thread before
// anything in that batch is stored, as a crash would.
import "../thread.ts";
import type { ToThread } from "../protocol.ts";

declare var self: Worker;

const real = self.onmessage!;
self.onmessage = (event: MessageEvent<ToThread>) => {
  const message = event.data;
  if (message.type === "publish" && message.commands.some((c) => c[3] === "die")) process.exit(1);
  real.call(self, event);
};
