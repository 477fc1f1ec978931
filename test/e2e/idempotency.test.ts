/**
 * Idempotency keys (docs/api.md) through the real server over HTTP/1.1 and HTTP/2: a repeat gets the first answer
 * and changes nothing; the same key for another request is 422, one in flight 409; errors are not kept; the key
 * survives a restart and a kill -9 (at most one message per key, answers replayed or the lost-answer 409); a new
 * API key's secret is replayed but never stored in plain text; records older than 24 hours are not replayed.
 * Messages are counted through the API, each named after the key that published it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync } from "node:fs";
import { BACKEND, PROTOS, startFanout, waitFor, type Fanout, type Proto, type Reply } from "./harness.ts";
import { withTestDatabase } from "../support/postgres.ts";

const DAY = 24 * 60 * 60 * 1000;
const unique = (prefix: string) => `${prefix}-${crypto.randomUUID()}`;

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

type Send = { body?: unknown; raw?: string; key?: string | null };
const withKey = (server: Fanout, proto: Proto, method: string, path: string, idempotencyKey: string, opts: Send = {}) =>
  server.call(proto, method, path, { ...opts, headers: { "idempotency-key": idempotencyKey } });

const replayed = (reply: Reply) => reply.headers.get("idempotent-replayed");

async function newQueue(server: Fanout, proto: Proto, schema?: unknown): Promise<string> {
  const reply = await server.call(proto, "POST", "/v1/queues", { body: { name: unique("q"), schema } });
  expect(reply.status).toBe(200);
  return reply.body.queue.id;
}

/** Every message of the queue, read page by page through the API: name → how many. */
async function messageCounts(server: Fanout, proto: Proto, queue: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let page = 1; ; page++) {
    const reply = await server.call(proto, "GET", `/v1/queues/${queue}/messages?per_page=100&page=${page}`);
    expect(reply.status).toBe(200);
    for (const m of reply.body.messages as { name: string }[]) counts.set(m.name, (counts.get(m.name) ?? 0) + 1);
    if (page * 100 >= Number(reply.headers.get("x-total-count"))) return counts;
  }
}
const total = async (server: Fanout, proto: Proto, queue: string) => [...(await messageCounts(server, proto, queue)).values()].reduce((a, b) => a + b, 0);

/** Runs `sql` (with `?` parameters) on the server's database beside the running server; how many rows changed. */
async function onDatabase(server: Fanout, sql: string, ...params: (string | number)[]): Promise<number> {
  if (BACKEND === "postgres") {
    let n = 0;
    const numbered = sql.replace(/\?/g, () => `$${++n}`);
    return withTestDatabase(server.dbPath, async (pg) => (await pg.unsafe(numbered, params)).count);
  }
  const db = new Database(server.dbPath);
  try {
    db.run("PRAGMA busy_timeout = 5000");
    return db.run(sql, params).changes;
  } finally {
    db.close();
  }
}

for (const proto of PROTOS) {
  describe(`idempotency keys over ${proto}`, () => {
    const send = (method: string, path: string, key: string, opts?: Send) => withKey(fanout, proto, method, path, key, opts);

    test("a repeated publish gets the first answer again and stores one message", async () => {
      const q = await newQueue(fanout, proto);
      const key = unique("k");
      const remaining = (reply: Reply) => Number(reply.headers.get("x-ratelimit-remaining"));
      const before = await fanout.call(proto, "GET", `/v1/queues/${q}`);
      const first = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { a: 1 } } });
      expect(first.status).toBe(200);
      expect(replayed(first)).toBeNull();
      expect(remaining(first)).toBe(remaining(before) - 1);
      for (let i = 1; i <= 2; i++) {
        const again = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { a: 1 } } });
        expect(again.status).toBe(200);
        expect(again.text).toBe(first.text);
        expect(again.headers.get("content-type")).toBe("application/json");
        expect(replayed(again)).toBe("true");
        // Each request, replay or not, counts once against the rate limit.
        expect(remaining(again)).toBe(remaining(first) - i);
      }
      expect(await messageCounts(fanout, proto, q)).toEqual(new Map([[key, 1]]));
    });

    test("the same JSON value in another formatting is the same request", async () => {
      const q = await newQueue(fanout, proto);
      const key = unique("k");
      const first = await send("POST", `/v1/queues/${q}/messages`, key, { raw: `{"name":"${key}","data":{"a":1,"b":[1,"x"],"10":null}}` });
      expect(first.status).toBe(200);
      const again = await send("POST", `/v1/queues/${q}/messages`, key, { raw: `{ "data": { "10": null, "b": [ 1.0, "\\u0078" ], "a": 1 },\n  "name": "${key}" }` });
      expect(again.status).toBe(200);
      expect(replayed(again)).toBe("true");
      expect(again.text).toBe(first.text);
      expect(await total(fanout, proto, q)).toBe(1);
    });

    test("the same key with another body, path, method or API key is 422 and changes nothing", async () => {
      const [q, other] = [await newQueue(fanout, proto), await newQueue(fanout, proto)];
      const key = unique("k");
      const first = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: 1 } });
      expect(first.status).toBe(200);
      const scoped = (await fanout.call(proto, "POST", "/v1/api_keys", { body: { name: unique("key") } })).body.api_key as string;
      const refused = [
        await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: 2 } }),
        await send("POST", `/v1/queues/${other}/messages`, key, { body: { name: key, data: 1 } }),
        await send("PUT", `/v1/queues/${q}/messages/${first.body.message.id}`, key, { body: { name: "renamed" } }),
        await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: 1 }, key: scoped }),
      ];
      for (const reply of refused) {
        expect(reply.status).toBe(422);
        expect(reply.body).toMatchObject({ title: "Unprocessable Entity", status: 422 });
        expect(reply.body.detail).toContain("Idempotency-Key");
      }
      expect(await messageCounts(fanout, proto, q)).toEqual(new Map([[key, 1]]));
      expect(await total(fanout, proto, other)).toBe(0);
    });

    test("PUT and DELETE take a key too: a repeated DELETE is replayed rather than answered 404", async () => {
      const q = await newQueue(fanout, proto);
      const m = (await fanout.call(proto, "POST", `/v1/queues/${q}/messages`, { body: { data: 1 } })).body.message.id;
      const [rename, remove] = [unique("k"), unique("k")];
      const renamed = await send("PUT", `/v1/queues/${q}/messages/${m}`, rename, { body: { name: "first" } });
      expect(renamed.status).toBe(200);
      expect(replayed(await send("PUT", `/v1/queues/${q}/messages/${m}`, rename, { body: { name: "first" } }))).toBe("true");
      expect((await send("DELETE", `/v1/queues/${q}/messages/${m}`, remove)).status).toBe(200);
      const again = await send("DELETE", `/v1/queues/${q}/messages/${m}`, remove);
      expect([again.status, again.text, replayed(again)]).toEqual([200, "", "true"]);
      expect((await fanout.call(proto, "DELETE", `/v1/queues/${q}/messages/${m}`)).status).toBe(404);
    });

    test("20 concurrent repeats of one key make one change; the others are replays or 409", async () => {
      const q = await newQueue(fanout, proto);
      const key = unique("k");
      // Connections opened beforehand, so the 20 requests arrive together rather than one TLS handshake apart.
      await Promise.all(Array.from({ length: 20 }, () => fanout.call(proto, "GET", `/v1/queues/${q}`)));
      const replies = await Promise.all(Array.from({ length: 20 }, () => send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { n: 1 } } })));
      const fresh = replies.filter((r) => r.status === 200 && replayed(r) === null);
      expect(fresh).toHaveLength(1);
      for (const reply of replies) {
        if (reply.status === 200) expect(reply.text).toBe(fresh[0]!.text);
        else expect(reply.status).toBe(409);
      }
      expect(await messageCounts(fanout, proto, q)).toEqual(new Map([[key, 1]]));
    });

    test("an error is not kept: the next request with the key runs anew", async () => {
      const key = unique("k");
      const missing = await send("POST", "/v1/queues/q_doesnotexist/messages", key, { body: { name: key, data: 1 } });
      expect(missing.status).toBe(404);
      const q = await newQueue(fanout, proto, { n: { type: "number" } });
      const refused = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { s: "x" } } });
      expect(refused.status).toBe(422);
      expect(refused.body.errors).toBeDefined();
      expect((await fanout.call(proto, "PUT", `/v1/queues/${q}`, { body: {} })).status).toBe(200);
      const made = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { s: "x" } } });
      expect(made.status).toBe(200);
      expect(replayed(made)).toBeNull();
      const again = await send("POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { s: "x" } } });
      expect(replayed(again)).toBe("true");
      expect(await total(fanout, proto, q)).toBe(1);
    });

    test("a key that is empty, too long or not printable ASCII is 400 and changes nothing", async () => {
      const q = await newQueue(fanout, proto);
      for (const key of ["", "x".repeat(256), "a\tb", "clé"]) {
        const reply = await send("POST", `/v1/queues/${q}/messages`, key, { body: { data: 1 } });
        expect(reply.status).toBe(400);
        expect(reply.body.detail).toContain("Idempotency-Key");
      }
      expect(await total(fanout, proto, q)).toBe(0);
      const longest = `${"~".repeat(250)} ${unique("").slice(0, 4)}`;
      expect((await send("POST", `/v1/queues/${q}/messages`, longest, { body: { data: 1 } })).status).toBe(200);
      expect(replayed(await send("POST", `/v1/queues/${q}/messages`, longest, { body: { data: 1 } }))).toBe("true");
    });

    test("a new API key's secret is replayed, and stored neither in plain text nor with the Idempotency-Key", async () => {
      const key = unique("k");
      const body = { name: unique("created"), scopes: [{ resource: "queues", access: "read", targets: ["*"] }] };
      const first = await send("POST", "/v1/api_keys", key, { body });
      expect(first.status).toBe(200);
      const again = await send("POST", "/v1/api_keys", key, { body });
      expect(replayed(again)).toBe("true");
      expect(again.body.api_key).toBe(first.body.api_key);
      expect((await fanout.call(proto, "GET", "/v1/queues", { key: first.body.api_key })).status).toBe(200);
      const named = (await fanout.call(proto, "GET", "/v1/api_keys?per_page=100")).body.api_keys.filter((k: { name: string }) => k.name === body.name);
      expect(named).toHaveLength(1);
      const files = BACKEND === "postgres"
        ? await withTestDatabase(fanout.dbPath, async (pg) => (await pg`SELECT key_hash, response FROM idempotency_keys`)
          .map((r: { key_hash: string; response: Uint8Array | null }) => Buffer.concat([Buffer.from(r.key_hash), Buffer.from(r.response ?? [])])))
        : [fanout.dbPath, `${fanout.dbPath}-wal`].filter(existsSync).map((file) => readFileSync(file));
      expect(files.length).toBeGreaterThan(0);
      for (const bytes of files) {
        expect(bytes.includes(first.body.api_key)).toBe(false);
        expect(bytes.includes(key)).toBe(false);
      }
    });

    test("a record older than 24 hours is not replayed; one without its answer is 409 and not made again", async () => {
      const q = await newQueue(fanout, proto);
      const [old, lost] = [unique("old"), unique("lost")];
      const since = Date.now();
      expect((await send("POST", `/v1/queues/${q}/messages`, old, { body: { name: old, data: 1 } })).status).toBe(200);
      expect(await onDatabase(fanout, "UPDATE idempotency_keys SET created_at = created_at - ? WHERE created_at >= ?", DAY + 1, since)).toBe(1);
      const anew = await send("POST", `/v1/queues/${q}/messages`, old, { body: { name: old, data: 1 } });
      expect(anew.status).toBe(200);
      expect(replayed(anew)).toBeNull();
      expect(await messageCounts(fanout, proto, q)).toEqual(new Map([[old, 2]]));

      // The state a crash between the commit and the answer leaves: the key recorded with the change, no answer.
      const after = Date.now();
      expect((await send("POST", `/v1/queues/${q}/messages`, lost, { body: { name: lost, data: 1 } })).status).toBe(200);
      expect(await onDatabase(fanout, "UPDATE idempotency_keys SET status = NULL, response = NULL WHERE created_at >= ?", after)).toBe(1);
      const retry = await send("POST", `/v1/queues/${q}/messages`, lost, { body: { name: lost, data: 1 } });
      expect(retry.status).toBe(409);
      expect(retry.body.detail).toContain("answer was lost");
      expect((await messageCounts(fanout, proto, q)).get(lost)).toBe(1);
    });
  });
}

/**
 * Kills the server (kill -9) while some keys are recorded with their change but without their answer: the state
 * a crash between the commit and the answer leaves. The test holds the write lock while it looks, so the server
 * cannot store those answers meanwhile. Returns how many keys are in that state.
 */
async function killBetweenCommitAndAnswer(server: Fanout): Promise<number> {
  if (BACKEND === "postgres") return killBetweenCommitAndAnswerOnPostgres(server);
  const db = new Database(server.dbPath);
  try {
    db.run("PRAGMA busy_timeout = 5000");
    const unanswered = db.query("SELECT count(*) AS n FROM idempotency_keys WHERE response IS NULL");
    return await waitFor(() => {
      db.run("BEGIN IMMEDIATE");
      try {
        const { n } = unanswered.get() as { n: number };
        if (n > 0) server.kill();
        return n > 0 ? n : undefined;
      } finally {
        db.run("ROLLBACK");
      }
    }, 10_000, () => "no key was ever committed without its answer");
  } finally {
    db.close();
  }
}

/**
 * The same on PostgreSQL: a lock on the table that lets readers in but no writer keeps the answers out. A killed
 * client's statements already sent still run on the server once the lock is free, so the dead server's backends are
 * ended while the lock is held: what was counted is then what the restarted server finds.
 */
async function killBetweenCommitAndAnswerOnPostgres(server: Fanout): Promise<number> {
  return withTestDatabase(server.dbPath, (pg) =>
    waitFor(() =>
      pg.begin(async (tx) => {
        await tx`LOCK TABLE idempotency_keys IN SHARE MODE`;
        const [{ n }] = await tx`SELECT count(*)::int AS n FROM idempotency_keys WHERE response IS NULL`;
        if (n === 0) return undefined;
        server.kill();
        await tx`SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name LIKE 'fanout %' AND pid <> pg_backend_pid()`;
        return n as number;
      }), 10_000, () => "no key was ever committed without its answer"));
}

describe("idempotency keys across a restart and a crash", () => {
  const servers: Fanout[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
  });
  const start = async (first?: Fanout) => {
    const server = await startFanout(first ? { db: first.dbPath, env: { FANOUT_BOOTSTRAP_KEY: first.key } } : {});
    servers.push(server);
    return server;
  };

  test("a key survives a restart: the repeat after it is a replay", async () => {
    const first = await start();
    const q = await newQueue(first, "h1");
    const keys = Object.fromEntries(PROTOS.map((proto) => [proto, unique(`k-${proto}`)]));
    const answers: Record<string, Reply> = {};
    for (const proto of PROTOS) answers[proto] = await withKey(first, proto, "POST", `/v1/queues/${q}/messages`, keys[proto]!, { body: { name: keys[proto], data: 1 } });
    expect(await first.stop()).toBe(0);
    const second = await start(first);
    for (const proto of PROTOS) {
      const again = await withKey(second, proto, "POST", `/v1/queues/${q}/messages`, keys[proto]!, { body: { name: keys[proto], data: 1 } });
      expect(again.status).toBe(200);
      expect(replayed(again)).toBe("true");
      expect(again.text).toBe(answers[proto]!.text);
    }
    expect(await total(second, "h2", q)).toBe(2);
  });

  test("kill -9 under idempotent publishes: every retry after the restart leaves one message per key", async () => {
    const first = await start();
    const q = await newQueue(first, "h1");
    // Publishers go on until the kill, so that it always finds publishes in flight however fast the machine is;
    // a fixed number of keys could all be answered before the first look.
    const answered = new Map<string, Reply>();
    const keys: string[] = [];
    let looking = true;
    const publisher = async (proto: Proto) => {
      while (looking) {
        const key = `crash-${keys.length}-${crypto.randomUUID()}`;
        keys.push(key);
        let reply: Reply;
        try {
          reply = await withKey(first, proto, "POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { key } } });
        } catch {
          return; // killed under this request: it was never answered
        }
        if (reply.status === 0) return; // HTTP/2: the stream ended without an answer
        expect(reply.status).toBe(200);
        answered.set(key, reply);
      }
    };
    const publishing = Promise.all(Array.from({ length: 32 }, (_, i) => publisher(i % 2 ? "h2" : "h1")));
    let unanswered: number;
    try {
      await waitFor(() => answered.size >= 80, 30_000, () => `only ${answered.size} answered:\n${first.output()}`);
      unanswered = await killBetweenCommitAndAnswer(first);
    } finally {
      looking = false;
    }
    await publishing;
    expect(answered.size).toBeGreaterThanOrEqual(80);
    expect(answered.size).toBeLessThan(keys.length);

    const second = await start(first);
    const outcomes = { fresh: 0, replayed: 0, lost: 0 };
    // 32 retries at a time: all at once would pass the server's limit of concurrent HTTP/2 streams.
    let next = 0;
    const retrier = async () => {
      while (next < keys.length) {
        const i = next++;
        const key = keys[i]!;
        const retry = await withKey(second, PROTOS[i % 2]!, "POST", `/v1/queues/${q}/messages`, key, { body: { name: key, data: { key } } });
        if (retry.status === 409) {
          expect(retry.body.detail).toContain("answer was lost");
          expect(answered.has(key)).toBe(false);
          outcomes.lost++;
          continue;
        }
        expect(retry.status).toBe(200);
        if (replayed(retry)) outcomes.replayed++;
        else outcomes.fresh++;
        if (answered.has(key)) {
          expect(replayed(retry)).toBe("true");
          expect(retry.text).toBe(answered.get(key)!.text);
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, retrier));
    const counts = await messageCounts(second, "h1", q);
    const twice = keys.filter((key) => (counts.get(key) ?? 0) !== 1);
    expect(twice).toEqual([]);
    expect(counts.size).toBe(keys.length);
    expect(outcomes.replayed).toBeGreaterThanOrEqual(answered.size);
    expect(outcomes.lost).toBe(unanswered);
    console.log(`idempotency crash: ${answered.size} answered before the kill; retries: ${JSON.stringify(outcomes)}`);
  }, 60_000);
});
