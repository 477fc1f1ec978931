/**
 * Usage events end to end (docs/delivery.md, Usage events) against the real server over HTTP/1.1 and HTTP/2:
 * every write call records its event, reads and refused writes record none, the category filters, paging by
 * startAfter/startAfterId, and isolation between organizations. The 24-hour cut-off needs a clock the test
 * controls: test/store/events.test.ts and src/modules/events/events.test.ts cover it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, cli, startFanout, type Fanout, type Proto } from "./harness.ts";

type Ref = { id: string; name: string | null } | null;
type Event = { id: string; type: string; stored_at: number; client: { id: string }; api_key: Ref; queue: Ref; listener: Ref; message: Ref };

let fanout: Fanout;
let orgId: string;
let owner: { id: string; name: string };

beforeAll(async () => {
  fanout = await startFanout();
  // The bootstrap recorded the owner key's api_key_added, the organization's first event.
  const first = (await fanout.call("h1", "GET", "/v1/events?limit=1")).body.events[0] as Event;
  orgId = first.client.id;
  owner = first.api_key as { id: string; name: string };
});
afterAll(async () => void (await fanout.stop()));

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
const target = (path: string) => `http://127.0.0.1:9/${path}`;
const path = (href: string) => href.slice(fanout.url.length);

function client(proto: Proto) {
  const call = (method: string, p: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, p, opts);
  const ok = async (method: string, p: string, opts?: Parameters<Fanout["call"]>[3]) => {
    const r = await call(method, p, opts);
    expect(r.status, `${method} ${p}: ${r.text}`).toBe(200);
    return r.body;
  };
  /** Every event after `cursor` (all when null), following `next` links; fails on an endless chain. */
  const eventsAfter = async (cursor: Event | null, query = "", key?: string) => {
    const from = cursor ? `startAfter=${cursor.stored_at}&startAfterId=${cursor.id}&` : "";
    let href: string | undefined = `/v1/events?${from}${query}`;
    const out: Event[] = [];
    for (let pages = 0; href && pages < 100; pages++) {
      const body = await ok("GET", href, { key });
      out.push(...body.events);
      href = body._links.next && path(body._links.next.href);
    }
    expect(href).toBeUndefined();
    return out;
  };
  /**
   * The events of writes after `cursor`: the listeners made here point at a closed port, so their probes record
   * liveness changes (listener_state_changed, no write) whenever they happen to come, during any later test too.
   */
  const writesAfter = async (cursor: Event | null, query = "") =>
    (await eventsAfter(cursor, query)).filter((e) => e.type !== "listener_state_changed");
  const lastEvent = async () => (await eventsAfter(null)).at(-1)!;
  return { call, ok, eventsAfter, writesAfter, lastEvent };
}

for (const proto of PROTOS) {
  describe(`events over ${proto}`, () => {
    const { call, ok, eventsAfter, writesAfter, lastEvent } = client(proto);

    test("every write call records one event with its references, in order; reads and refusals record none", async () => {
      const start = await lastEvent();
      const t0 = Date.now();
      const key = await ok("POST", "/v1/api_keys", { body: { name: unique("k") } });
      await ok("PUT", `/v1/api_keys/${key.id}`, { body: { name: `${key.name}-2` } });
      await ok("DELETE", `/v1/api_keys/${key.id}`);
      const org = (await ok("GET", `/v1/api_clients/${orgId}`)).api_client;
      await ok("PUT", `/v1/api_clients/${orgId}`, { body: { name: org.name } });
      const q = (await ok("POST", "/v1/queues", { body: { name: unique("q") } })).queue;
      await ok("PUT", `/v1/queues/${q.id}`, { body: { name: `${q.name}-2` } });
      const l = (await ok("POST", `/v1/queues/${q.id}/listeners`, { body: { name: unique("l"), notify_url: target("n"), liveness_url: target("l") } })).listener;
      await ok("PUT", `/v1/queues/${q.id}/listeners/${l.id}`, { body: { name: `${l.name}-2` } });
      await ok("POST", `/v1/queues/${q.id}/listeners/${l.id}/secret/rotate`);
      const m = (await ok("POST", `/v1/queues/${q.id}/messages`, { body: { name: "m", data: { n: 1 } } })).message;
      await ok("PUT", `/v1/queues/${q.id}/messages/${m.id}`, { body: { name: "m2" } });
      // Reads and refused writes in between leave no trace.
      await ok("GET", `/v1/queues/${q.id}`);
      await ok("GET", `/v1/queues/${q.id}/messages/${m.id}`);
      expect((await call("POST", "/v1/queues", { body: { name: `${q.name}-2` } })).status).toBe(409);
      expect((await call("DELETE", "/v1/queues/q_unknown")).status).toBe(404);
      await ok("DELETE", `/v1/queues/${q.id}/messages/${m.id}`);
      await ok("DELETE", `/v1/queues/${q.id}/listeners/${l.id}`);
      await ok("DELETE", `/v1/queues/${q.id}`);

      const events = await writesAfter(start);
      const caller = owner;
      const queue = { id: q.id, name: `${q.name}-2` };
      const listener = { id: l.id, name: `${l.name}-2` };
      expect(events.map(({ type, api_key, queue, listener, message }) => ({ type, api_key, queue, listener, message }))).toEqual([
        { type: "api_key_added", api_key: { id: key.id, name: key.name }, queue: null, listener: null, message: null },
        { type: "api_key_updated", api_key: { id: key.id, name: `${key.name}-2` }, queue: null, listener: null, message: null },
        { type: "api_key_deleted", api_key: { id: key.id, name: `${key.name}-2` }, queue: null, listener: null, message: null },
        { type: "api_client_updated", api_key: caller, queue: null, listener: null, message: null },
        { type: "queue_added", api_key: caller, queue: { id: q.id, name: q.name }, listener: null, message: null },
        { type: "queue_updated", api_key: caller, queue, listener: null, message: null },
        { type: "listener_added", api_key: caller, queue, listener: { id: l.id, name: l.name }, message: null },
        { type: "listener_updated", api_key: caller, queue, listener, message: null },
        { type: "listener_updated", api_key: caller, queue, listener, message: null },
        { type: "message_added", api_key: caller, queue, listener: null, message: { id: m.id, name: "m" } },
        { type: "message_updated", api_key: caller, queue, listener: null, message: { id: m.id, name: "m2" } },
        { type: "message_deleted", api_key: caller, queue, listener: null, message: { id: m.id, name: "m2" } },
        { type: "listener_deleted", api_key: caller, queue, listener, message: null },
        { type: "queue_deleted", api_key: caller, queue, listener: null, message: null },
      ]);
      for (const e of events) {
        expect(e.client).toEqual({ id: orgId });
        expect(e.stored_at).toBeGreaterThanOrEqual(t0);
        expect(e.stored_at).toBeLessThanOrEqual(Date.now());
      }
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    });

    test("a write with another key names that key", async () => {
      const key = await ok("POST", "/v1/api_keys", { body: { name: unique("k") } });
      const start = await lastEvent();
      const q = (await ok("POST", "/v1/queues", { body: { name: unique("q") }, key: key.api_key })).queue;
      expect(await writesAfter(start)).toMatchObject([{ type: "queue_added", api_key: { id: key.id, name: key.name }, queue: { id: q.id } }]);
    });

    test("filters by category; `all` is the default; an unknown category or limit is 400", async () => {
      const start = await lastEvent();
      const key = await ok("POST", "/v1/api_keys", { body: { name: unique("k") } });
      const q = (await ok("POST", "/v1/queues", { body: { name: unique("q") } })).queue;
      const l = (await ok("POST", `/v1/queues/${q.id}/listeners`, { body: { name: unique("l"), notify_url: target("n"), liveness_url: target("l") } })).listener;
      await ok("POST", `/v1/queues/${q.id}/messages`, { body: { data: 1 } });
      await ok("PUT", `/v1/api_clients/${orgId}`, { body: {} });
      await ok("DELETE", `/v1/api_keys/${key.id}`);
      const calls = (query?: string) => writesAfter(start, query);
      const everything = await calls();
      expect(everything.map((e) => e.type)).toEqual(["api_key_added", "queue_added", "listener_added", "message_added", "api_client_updated", "api_key_deleted"]);
      expect(await calls("events=all")).toEqual(everything);
      const types = async (category: string) => (await calls(`events=${category}`)).map((e) => e.type);
      expect(await types("api_keys")).toEqual(["api_key_added", "api_key_deleted"]);
      expect(await types("queues")).toEqual(["queue_added"]);
      expect((await calls("events=listeners")).map((e) => e.listener?.id)).toEqual([l.id]);
      expect(await types("messages")).toEqual(["message_added"]);
      for (const bad of ["events=api_clients", "events=", "events=QUEUES", "limit=0", "limit=1001", "limit=x", "startAfter=x&startAfterId=y"]) {
        const r = await call("GET", `/v1/events?${bad}`);
        expect(r.status, bad).toBe(400);
        expect(r.body).toMatchObject({ title: "Bad Request", status: 400 });
      }
    });

    test("pages over more than one page without overlap or gap, with self and next links", async () => {
      const start = await lastEvent();
      for (let i = 0; i < 7; i++) await ok("POST", "/v1/queues", { body: { name: unique("page") } });
      // The queues category: a listener of another test may change state (its probe) meanwhile.
      const whole = await eventsAfter(start, "limit=1000&events=queues");
      expect(whole).toHaveLength(7);

      const cursor = `startAfter=${start.stored_at}&startAfterId=${start.id}`;
      const first = await ok("GET", `/v1/events?${cursor}&limit=3&events=queues`);
      expect(first._links.self.href).toBe(`${fanout.url}/v1/events?${cursor}&limit=3&events=queues`);
      const seen: Event[] = [...first.events];
      let next: string | undefined = first._links.next?.href;
      let pages = 1;
      while (next) {
        expect(next).toContain("limit=3");
        expect(next).toContain("events=queues");
        const body = await ok("GET", path(next));
        expect(body.events.length).toBeLessThanOrEqual(3);
        seen.push(...body.events);
        next = body._links.next?.href;
        pages++;
      }
      expect(pages).toBe(3);
      expect(seen.map((e) => e.id)).toEqual(whole.map((e) => e.id));
      // An exactly full last page has no next link: the server looked one further.
      const two = await ok("GET", `/v1/events?startAfter=${whole[4]!.stored_at}&startAfterId=${whole[4]!.id}&limit=2&events=queues`);
      expect(two.events.map((e: Event) => e.id)).toEqual([whole[5]!.id, whole[6]!.id]);
      expect(two._links.next).toBeUndefined();
    });

    test("startAfter or startAfterId alone is ignored; the default limit is 100", async () => {
      const start = await lastEvent();
      const fromStart = (await ok("GET", "/v1/events?limit=5")).events;
      expect((await ok("GET", `/v1/events?limit=5&startAfter=${start.stored_at}`)).events).toEqual(fromStart);
      expect((await ok("GET", `/v1/events?limit=5&startAfterId=${start.id}`)).events).toEqual(fromStart);
      // The server records events of its own (a listener's liveness) meanwhile: the page is bounded by the counts
      // read before and after it, and events are only added.
      const before = (await eventsAfter(null, "limit=1000")).length;
      const page = await ok("GET", "/v1/events");
      const after = (await eventsAfter(null, "limit=1000")).length;
      expect(page.events.length).toBeGreaterThanOrEqual(Math.min(100, before));
      expect(page.events.length).toBeLessThanOrEqual(Math.min(100, after));
      if (before > 100) expect(page._links.next).toBeTruthy();
      if (after <= 100) expect(page._links.next).toBeFalsy();
    });

    test("needs a read scope on events", async () => {
      const reader = await ok("POST", "/v1/api_keys", { body: { name: unique("k"), scopes: [{ resource: "events", access: "read", targets: ["*"] }] } });
      const other = await ok("POST", "/v1/api_keys", { body: { name: unique("k"), scopes: [{ resource: "queues", access: "write", targets: ["*"] }] } });
      expect((await call("GET", "/v1/events", { key: reader.api_key })).status).toBe(200);
      expect((await call("GET", "/v1/events", { key: other.api_key })).body).toMatchObject({ title: "Forbidden", status: 403 });
      expect((await call("GET", "/v1/events", { key: null })).status).toBe(401);
    });
  });
}

describe("events of one organization", () => {
  test("are invisible to another", async () => {
    const made = await cli(["orgs", "create", `com.example.other-${crypto.randomUUID().slice(0, 8)}`], { FANOUT_DB: fanout.dbPath });
    expect(made.code).toBe(0);
    const otherKey = made.stdout.match(/owner key:\s+(\S+)/)![1]!;
    const otherId = made.stdout.match(/id:\s+(\S+)/)![1]!;
    for (const proto of PROTOS) {
      const { ok, eventsAfter } = client(proto);
      await ok("POST", "/v1/queues", { body: { name: unique("theirs") }, key: otherKey });
      await ok("POST", "/v1/queues", { body: { name: unique("mine") } });
      const theirs = await eventsAfter(null, "", otherKey);
      const mine = await eventsAfter(null);
      expect(theirs.every((e) => e.client.id === otherId)).toBe(true);
      expect(mine.every((e) => e.client.id === orgId)).toBe(true);
      expect(theirs.map((e) => e.type)).toEqual(["api_key_added", ...(proto === "h1" ? [] : ["queue_added"]), "queue_added"]);
      const mineIds = new Set(mine.map((e) => e.id));
      expect(theirs.some((e) => mineIds.has(e.id))).toBe(false);
      // A cursor taken from the other organization's events does not reveal them either.
      const last = mine.at(-1)!;
      const across = await ok("GET", `/v1/events?startAfter=${last.stored_at - 1}&startAfterId=${last.id}`, { key: otherKey });
      expect(across.events.every((e: Event) => e.client.id === otherId)).toBe(true);
    }
  });
});
