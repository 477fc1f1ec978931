// The API thread's side of the publish thread (protocol: protocol.ts). `publish` has the store's contract: it
// settles after the transaction holding the message committed, with the same errors as the in-process store.
// Publishes go over in batches: what one turn of the event loop gathered, or every 16 (EAGER_BATCH).
//
// If the thread dies, every publish it had not answered fails with 503: whether it committed is unknown, and
// the client's retry is what at-least-once delivery already allows. The next publish starts a new thread.
import type { Logger } from "../../../lib/log.ts";
import { unavailable } from "../../../lib/errors.ts";
import { threadEntry } from "../../../lib/thread-entry.ts";
import type { Actor, PublishedMessage, PublishInput } from "../../index.ts";
import type { Durability } from "../db.ts";
import { fromWire, toCommand, type FromThread, type PublishCommand, type ToThread } from "./protocol.ts";

export type PublishThreadOptions = {
  path: string;
  durability: Durability;
  temporary: boolean;
  log?: Logger;
  /** Tests only: another thread script speaking the same protocol. */
  threadUrl?: string;
};

type Waiting = { resolve: (id: string) => void; reject: (error: unknown) => void };

/** Bounds the wait for a thread that does not answer `close` (a commit stuck on a lock still times out at 5 s). */
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * A part-batch goes over at once when it reaches this size, not only at the end of the turn: with every client
 * waiting on the batch in flight, the two threads otherwise take turns (one idle while the other works) instead
 * of overlapping. Measured at 64 connections: 12.2k publishes/s at the end of the turn only, 13.7k at 16.
 */
const EAGER_BATCH = 16;

export function publishThreadEntry(moduleUrl = import.meta.url): string {
  return threadEntry(moduleUrl, "store/sqlite/publish-thread/client.ts", "store/sqlite/publish-thread/thread.ts");
}

export class PublishThread {
  private worker: Worker | null = null;
  private next = 1;
  private readonly waiting = new Map<number, Waiting>();
  private batch: PublishCommand[] = [];
  private flushQueued = false;
  private closing: Promise<void> | null = null;
  private settleClose: (() => void) | null = null;

  constructor(private readonly options: PublishThreadOptions) {
    this.spawn(); // now rather than at the first publish, which would otherwise wait for the thread to start
  }

  publish(orgId: string, queueId: string, input: PublishInput, now: number, actor: Actor): Promise<PublishedMessage> {
    if (this.closing) return Promise.reject(unavailable("The store is closing."));
    const n = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(n, { resolve: (id) => resolve({ id, orgId, queueId, name: input.name, createdAt: now }), reject });
      this.batch.push(toCommand(n, orgId, queueId, input, now, actor));
      if (this.batch.length >= EAGER_BATCH) return this.flush();
      if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => {
          this.flushQueued = false;
          this.flush();
        });
      }
    });
  }

  /** Waits for every publish sent to be answered, then for the thread to close its database. */
  close(): Promise<void> {
    this.closing ??= this.closeThread();
    return this.closing;
  }

  private spawn(): Worker {
    const w = new Worker(this.options.threadUrl ?? publishThreadEntry());
    this.worker = w;
    w.addEventListener("message", (event: MessageEvent<FromThread>) => this.onMessage(event.data));
    w.addEventListener("error", (event: ErrorEvent) => this.options.log?.error("publish thread error", { error: event.message }));
    w.addEventListener("close", () => this.onClose(w));
    this.post(w, { type: "open", path: this.options.path, durability: this.options.durability, temporary: this.options.temporary });
    return w;
  }

  private post(w: Worker, message: ToThread): void {
    w.postMessage(message);
  }

  private flush(): void {
    const commands = this.batch;
    this.batch = [];
    if (commands.length > 0) this.post(this.worker ?? this.spawn(), { type: "publish", commands });
  }

  private onMessage(message: FromThread): void {
    if (message.type === "done") {
      const { published, failed } = message;
      for (let i = 0; i < published.length; i += 2) this.take(published[i] as number)?.resolve(published[i + 1] as string);
      for (const { n, error } of failed) this.take(n)?.reject(fromWire(error));
    } else if (message.type === "closed") {
      this.settleClose?.();
    } else if (message.type === "fatal") {
      this.options.log?.error("publish thread failed", { error: message.error });
    }
  }

  /** The caller waiting for publish `n`; none when it was already failed because its thread was thought dead. */
  private take(n: number): Waiting | undefined {
    const waiting = this.waiting.get(n);
    this.waiting.delete(n);
    return waiting;
  }

  private onClose(w: Worker): void {
    if (w !== this.worker) return;
    this.worker = null;
    const unanswered = this.failWaiting("The publish thread stopped before answering; publish again.");
    if (this.closing) this.settleClose?.();
    else this.options.log?.error("publish thread exited; the next publish starts a new one", { unanswered });
  }

  private async closeThread(): Promise<void> {
    if (this.flushQueued) this.flush();
    const w = this.worker;
    if (!w) return;
    let timer: Timer | undefined;
    await new Promise<void>((resolve) => {
      this.settleClose = resolve;
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
      this.post(w, { type: "close" });
    });
    clearTimeout(timer);
    this.worker = null;
    w.terminate();
    this.failWaiting("The publish thread did not finish before the store closed; publish again.");
  }

  private failWaiting(detail: string): number {
    const lost = [...this.waiting.values()];
    this.waiting.clear();
    for (const waiting of lost) waiting.reject(unavailable(detail));
    return lost.length;
  }
}
