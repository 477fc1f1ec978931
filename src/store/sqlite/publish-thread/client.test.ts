import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore, type SqliteStore } from "../index.ts";
import { AppError, SchemaChanged } from "../../../lib/errors.ts";
import type { Logger } from "../../../lib/log.ts";
import type { Actor } from "../../index.ts";
import { publishThreadEntry } from "./client.ts";

const actor: Actor = { keyId: "key_1", keyName: "caller" };
const DYING = new URL("./testing/dying-thread.ts", import.meta.url).href;
const dirs: string[] = [];
const open: SqliteStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {}); // a test may have closed it already
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (msg: string) => void lines.push(msg);
  return { lines, info: add, warn: add, error: add };
}

async function storeWithQueue(file: string, threadUrl?: string, log?: Logger) {
  const store = openSqliteStore(file, { durability: "normal", publishThread: { threadUrl, log } });
  open.push(store);
  const org = (await store.orgs.create("com.example.a", 1)).id;
  const queue = await store.queues.create(org, { name: "q", schema: null, schemaId: null }, 1, actor);
  return { store, org, queue: queue.id };
}

const freshFile = () => {
  const dir = mkdtempSync(join(tmpdir(), "fanout-publish-thread-"));
  dirs.push(dir);
  return join(dir, "f.db");
};

test("a thread that dies fails the publishes it had not answered with 503; the next publish starts a new one", async () => {
  const log = recordingLog();
  const { store, org, queue } = await storeWithQueue(freshFile(), DYING, log);
  const publish = (name: string) => store.messages.publish(org, queue, { name, data: "1" }, 2, actor);
  const before = await publish("before");
  const lost = await Promise.allSettled([publish("die"), publish("beside it")]);
  for (const outcome of lost) {
    expect(outcome.status).toBe("rejected");
    const error = (outcome as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(AppError);
    expect([error.status, error.headers?.["retry-after"]]).toEqual([503, "5"]);
  }
  const after = await publish("after");
  const stored = await store.messages.list(org, { visible: "all" }, { offset: 0, limit: 10 });
  expect(stored.items.map((m) => m.id)).toEqual([before.id, after.id]);
  expect(log.lines).toContain("publish thread exited; the next publish starts a new one");
});

test("closing waits for every publish already made to commit, and refuses later ones", async () => {
  const file = freshFile();
  const { store, org, queue } = await storeWithQueue(file);
  const publishes = Array.from({ length: 50 }, (_, i) => store.messages.publish(org, queue, { name: `m${i}`, data: `${i}` }, 2, actor));
  await store.close();
  const settled = await Promise.allSettled(publishes);
  expect(settled.filter((s) => s.status === "fulfilled").length).toBe(50);
  const late = await store.messages.publish(org, queue, { name: "late", data: "1" }, 3, actor).catch((e) => e);
  expect((late as AppError).status).toBe(503);
  const reopened = openSqliteStore(file, { durability: "normal" });
  open.push(reopened);
  expect((await reopened.messages.list(org, { visible: "all" }, { offset: 0, limit: 100 })).total).toBe(50);
});

test("errors cross the thread as the classes the caller tells apart", async () => {
  const { store, org, queue } = await storeWithQueue(freshFile());
  const missing = await store.messages.publish(org, "q_missing", { name: null, data: "1" }, 2, actor).catch((e) => e);
  expect([missing instanceof AppError, missing.status, missing.detail]).toEqual([true, 404, "The queue does not exist."]);
  const changed = await store.messages.publish(org, queue, { name: null, data: "1", schemaId: "elsewhere" }, 2, actor).catch((e) => e);
  expect(changed).toBeInstanceOf(SchemaChanged); // the service checks it with instanceof, and publishes again
});

test("the thread's entry is found from source and inside a compiled binary", () => {
  const src = "file:///app/src/store/sqlite/publish-thread/client.ts";
  expect(publishThreadEntry(src)).toBe("file:///app/src/store/sqlite/publish-thread/thread.ts");
  expect(publishThreadEntry("file:///$bunfs/root/fanout")).toBe("file:///$bunfs/root/store/sqlite/publish-thread/thread.ts");
});
