/**
 * Hostile input through the real server, over HTTP/1.1 and HTTP/2: bodies nested too deep on every kind of route
 * (the hot publish route, Elysia's own parser, the optional-body parser), JSON nested too deep inside a string
 * `data`, schema patterns that would backtrack, and paging values that reached SQLite. Each gets a JSON 4xx and
 * changes nothing; the server goes on answering.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout, type Reply } from "./harness.ts";

let fanout: Fanout;
beforeAll(async () => void (fanout = await startFanout()));
afterAll(async () => void (await fanout.stop()));

const deepArrays = (n: number) => "[".repeat(n) + "]".repeat(n);
const deepObjects = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
const label = () => crypto.randomUUID().slice(0, 8);

function expectError(r: Reply, status: number, detail?: RegExp) {
  expect(r.status).toBe(status);
  expect(r.body).toMatchObject({ title: expect.any(String), status });
  if (detail) expect(`${r.body.detail} ${JSON.stringify(r.body.errors ?? [])}`).toMatch(detail);
}

for (const proto of PROTOS) {
  describe(`hostile input over ${proto}`, () => {
    const call = (method: string, path: string, opts?: Parameters<Fanout["call"]>[3]) => fanout.call(proto, method, path, opts);
    const queue = async (schema?: unknown) => {
      const r = await call("POST", "/v1/queues", { body: { name: `q-${label()}`, schema } });
      expect(r.status).toBe(200);
      return r.body.queue.id as string;
    };

    test("bodies nested deeper than 64 levels are refused before anything parses them, on every kind of route", async () => {
      const q = await queue();
      const deep = [deepObjects(20_000), deepArrays(20_000), `{"name":"x","data":${deepArrays(64)}}`];
      for (const raw of deep) {
        expectError(await call("POST", "/v1/queues", { raw }), 400, /deeper than 64/);
        expectError(await call("POST", `/v1/queues/${q}/messages`, { raw }), 400, /deeper than 64/);
        expectError(await call("POST", `/v1/queues/${q}/messages?pretty`, { raw }), 400, /deeper than 64/);
        expectError(await call("PUT", `/v1/queues/${q}`, { raw }), 400, /deeper than 64/);
        expectError(await call("POST", "/v1/api_keys", { raw }), 400, /deeper than 64/);
      }
      // At the limit a body is read as usual: 63 levels of data inside the body's own object.
      const atLimit = await call("POST", `/v1/queues/${q}/messages`, { raw: `{"data":${deepArrays(63)}}` });
      expect(atLimit.status).toBe(200);
      const listed = await call("GET", `/v1/queues/${q}/messages?per_page=100`);
      expect(listed.body.messages).toHaveLength(1);
      expect((await call("GET", "/healthz")).status).toBe(200);
    });

    test("JSON nested too deep inside a string data is refused on a queue with a schema", async () => {
      const q = await queue({ n: { type: "number" } });
      const r = await call("POST", `/v1/queues/${q}/messages`, { body: { data: deepArrays(5_000) } });
      expectError(r, 422, /nested at most 64/);
      expect((await call("POST", `/v1/queues/${q}/messages`, { body: { data: '{"n":1}' } })).status).toBe(200);
    });

    test("patterns that backtrack on other engines match in linear time; lookaround and backreferences are refused", async () => {
      const q = await queue({ s: { type: "string", pattern: "^(a+)+$" } });
      // On a backtracking engine this one publish would hold the server for minutes.
      expectError(await call("POST", `/v1/queues/${q}/messages`, { body: { data: { s: `${"a".repeat(40)}!` } } }), 422, /must match the pattern/);
      expect((await call("POST", `/v1/queues/${q}/messages`, { body: { data: { s: "aaaa" } } })).status).toBe(200);
      for (const [pattern, construct] of [["(?=a)a", "lookaround"], ["(a)\\1", "backreference"]] as const) {
        const r = await call("POST", "/v1/queues", { body: { name: `q-${label()}`, schema: { s: { type: "string", pattern } } } });
        expectError(r, 422);
        expect(r.body.errors).toEqual([{ path: "/schema/s/pattern", message: expect.stringContaining(construct) }]);
      }
    });

    test("paging values that are not small integers are a 400 naming the parameter, on every list", async () => {
      const q = await queue();
      const lists = ["/v1/queues", "/v1/messages", "/v1/listeners", "/v1/api_keys", `/v1/queues/${q}/messages`, `/v1/queues/${q}/listeners`, "/queues"];
      for (const path of lists) {
        for (const query of ["page=99999999999999999999", "page=1e20&per_page=1e9", "per_page=1000", "per_page=0", "page=-1"]) {
          const r = await call("GET", `${path}?${query}`);
          expect({ path, query, status: r.status }).toEqual({ path, query, status: 400 });
          expect(r.body.title).toBe("Bad Request");
        }
        expect((await call("GET", `${path}?page=1000000&per_page=100`)).status).toBe(200);
      }
    });
  });
}
