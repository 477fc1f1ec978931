/**
 * A listener for end-to-end tests: Bun.serve on a loopback address (port 0) that records every request and
 * answers as the test says, and can change its answer mid-test. `/notify` receives deliveries and `/live`
 * liveness probes; both answer 200 until told otherwise. An answer of "hang" never responds (until close); a
 * promise answers when it settles (a slow listener).
 */
import { afterAll, beforeAll } from "bun:test";
import type { Server } from "bun";
import { startFanout, waitFor, type Fanout, type Proto } from "./harness.ts";

export type Received = { method: string; path: string; headers: Record<string, string>; body: string; at: number };
export type Answer = Response | Promise<Response> | "hang";
export type Responder = (request: Received, index: number) => Answer;

export const ok = (): Answer => new Response("ok");
export const status = (code: number, headers?: Record<string, string>): Responder => () => new Response(`status ${code}`, { status: code, headers });

export class Receiver {
  readonly requests: Received[] = [];
  private readonly responders = new Map<string, Responder>();
  private readonly hanging = new Set<() => void>();
  private server!: Server<undefined>;

  private constructor(readonly host: string) {}

  static async start(host = "127.0.0.1"): Promise<Receiver> {
    const receiver = new Receiver(host);
    receiver.server = Bun.serve({ hostname: host, port: 0, fetch: (request) => receiver.handle(request) });
    return receiver;
  }

  get origin(): string {
    return `http://${this.host}:${this.server.port}`;
  }
  get notifyUrl(): string {
    return `${this.origin}/notify`;
  }
  get livenessUrl(): string {
    return `${this.origin}/live`;
  }

  /** How `path` ("/notify", "/live", or any other) answers from now on; index counts that path's requests from 0. */
  answer(path: string, responder: Responder): this {
    this.responders.set(path, responder);
    return this;
  }

  /** Requests to /notify, in arrival order. */
  deliveries(): Received[] {
    return this.requests.filter((r) => r.path === "/notify");
  }

  probes(): Received[] {
    return this.requests.filter((r) => r.path === "/live");
  }

  /** Waits until at least `n` deliveries arrived and returns them. */
  async waitForDeliveries(n: number, ms = 10_000): Promise<Received[]> {
    return waitFor(() => this.deliveries().length >= n && this.deliveries(), ms, () => `expected ${n} deliveries, got ${this.deliveries().length}`);
  }

  close(): void {
    for (const release of this.hanging) release();
    this.server.stop(true);
  }

  private async handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    const received: Received = {
      method: request.method, path, headers: Object.fromEntries(request.headers), body: await request.text(), at: Date.now(),
    };
    const index = this.requests.filter((r) => r.path === path).length;
    this.requests.push(received);
    const answer = (this.responders.get(path) ?? ok)(received, index);
    if (answer !== "hang") return answer;
    return new Promise<Response>((resolve) => {
      const release = () => resolve(new Response("released", { status: 503 }));
      this.hanging.add(release);
    });
  }
}

/**
 * The API calls delivery tests make, each asserting its own success so a failing setup says where. `fanout` may be
 * a getter, for an API made before its server starts.
 */
export function deliveryApi(fanout: Fanout | (() => Fanout), proto: Proto = "h1") {
  const server = typeof fanout === "function" ? fanout : () => fanout;
  const call = async (method: string, path: string, body?: unknown, expected = 200) => {
    const reply = await server().call(proto, method, path, body === undefined ? {} : { body });
    if (reply.status !== expected) throw new Error(`${method} ${path}: ${reply.status} ${reply.text}`);
    return reply.body;
  };
  return {
    call,
    queue: async (name = `q-${crypto.randomUUID()}`): Promise<string> => (await call("POST", "/v1/queues", { name })).queue.id,
    listener: async (queue: string, name: string, urls: { notifyUrl: string; livenessUrl: string }) => {
      const body = await call("POST", `/v1/queues/${queue}/listeners`, { name, notify_url: urls.notifyUrl, liveness_url: urls.livenessUrl });
      return { id: body.listener.id as string, secret: body.secret as string };
    },
    publish: async (queue: string, data: unknown, name?: string): Promise<string> =>
      (await call("POST", `/v1/queues/${queue}/messages`, name === undefined ? { data } : { name, data })).message.id,
    message: async (queue: string, id: string) => (await call("GET", `/v1/queues/${queue}/messages/${id}`)).message,
    attempts: async (queue: string, id: string) => (await call("GET", `/v1/queues/${queue}/messages/${id}/attempts`)).attempts,
    listenerView: async (queue: string, id: string) => (await call("GET", `/v1/queues/${queue}/listeners/${id}`)).listener,
    /** Waits until the message's delivery to `listener` is in `state`, and returns that delivery. */
    async settled(queue: string, message: string, listener: string, state: string, ms = 10_000) {
      let last: unknown;
      return waitFor(async () => {
        const d = (await this.message(queue, message)).deliveries.find((x: any) => x.listener.id === listener);
        last = d;
        return d?.state === state && d;
      }, ms, () => `delivery never became ${state}: ${JSON.stringify(last)}`);
    },
  };
}

/** Receivers started by a test file, closed together in its afterAll. */
export function receiverSet() {
  const started: Receiver[] = [];
  return {
    async start(host?: string): Promise<Receiver> {
      const r = await Receiver.start(host);
      started.push(r);
      return r;
    },
    closeAll(): void {
      for (const r of started) r.close();
    },
  };
}

/**
 * One server for a test file: started with `env` before its tests, stopped after them with every receiver they
 * started through `receiver`. `fanout()` is the server once it runs; `api` calls it over HTTP/1.1.
 */
export function serverForFile(env: Record<string, string>) {
  let started: Fanout | undefined;
  const receivers = receiverSet();
  beforeAll(async () => {
    started = await startFanout({ env });
  });
  afterAll(async () => {
    receivers.closeAll();
    await started?.stop();
  });
  const fanout = (): Fanout => {
    if (!started) throw new Error("the server starts in beforeAll");
    return started;
  };
  return { fanout, api: deliveryApi(fanout), receiver: receivers.start };
}
