// Entry point of the publish thread (protocol: protocol.ts). Publishes are most of what the API writes, and their
// SQL (the message, a delivery per listener, the usage event, the commit) cost as much CPU as the whole HTTP
// side of the request. On their own thread they run beside the API thread on another core instead of in turn
// with it. The thread opens its own connection to the database the API thread has migrated, and runs the
// same store code through its own group commit: commands arriving together share one transaction.
// A build must list this file as an entry point (scripts/build.ts).
import type { Database } from "bun:sqlite";
import { openDatabase } from "../db.ts";
import { connect } from "../conn.ts";
import { startCheckpoints } from "../checkpoints.ts";
import { messageStore } from "../messages.ts";
import type { MessageStore } from "../../index.ts";
import { fromCommand, toWire, type FromThread, type PublishCommand, type PublishFailure, type ToThread } from "./protocol.ts";

declare var self: Worker;

let sqlite: Database | undefined;
let messages: MessageStore | undefined;
let stopCheckpoints: (() => void) | undefined;
const running = new Set<Promise<void>>();
const post = (message: FromThread) => self.postMessage(message);

async function publishAll(commands: PublishCommand[]): Promise<void> {
  const calls = commands.map(fromCommand);
  const settled = await Promise.allSettled(calls.map((c) => messages!.publish(c.orgId, c.queueId, c.input, c.now, c.actor)));
  const published: (number | string)[] = [];
  const failed: PublishFailure[] = [];
  settled.forEach((s, i) => {
    const n = calls[i]!.n;
    if (s.status === "fulfilled") published.push(n, s.value.id);
    else failed.push({ n, error: toWire(s.reason) });
  });
  post({ type: "done", published, failed });
}

async function close(): Promise<void> {
  stopCheckpoints?.();
  await Promise.all(running);
  sqlite?.close();
  post({ type: "closed" });
}

self.onmessage = (event: MessageEvent<ToThread>) => {
  const message = event.data;
  if (message.type === "open") {
    try {
      // This connection keeps the WAL bounded for every connection to the file (checkpoints.ts), on a timer
      // rather than inside its commits.
      sqlite = openDatabase(message.path, message.durability, message.temporary, "elsewhere");
      messages = messageStore(connect(sqlite));
      const db = sqlite;
      stopCheckpoints = startCheckpoints(db, message.path, (e) => {
        post({ type: "fatal", error: `checkpoint failed: ${(e as Error).message}` });
        process.exit(1); // the client fails what was unanswered with 503 and starts a new thread
      });
    } catch (e) {
      post({ type: "fatal", error: `could not open the database: ${(e as Error).message}` });
      process.exit(1);
    }
  } else if (message.type === "publish") {
    const work = publishAll(message.commands);
    running.add(work);
    void work.finally(() => running.delete(work));
  } else if (message.type === "close") {
    void close();
  }
};
