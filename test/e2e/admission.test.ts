/**
 * The front door's order over the wire (docs/api.md, "Admission"): the body is bounded before the key is looked
 * at, on the hot publish route, on the app's routes, and with an Idempotency-Key, over HTTP/1.1 (raw bytes,
 * chunked included) and HTTP/2; and a body that comes with neither a length nor a type is refused over HTTP/2 as
 * over HTTP/1.1. src/http/hot.test.ts compares the ways in process, answer for answer.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROTOS, startFanout, type Fanout, type Proto } from "./harness.ts";
import { H1Connection, H2Client, requestBytes, type Outcome } from "./raw.ts";

let fanout: Fanout;
let queue: string;
beforeAll(async () => {
  fanout = await startFanout({ env: { FANOUT_LOCKOUT: "2/1m:1m" } });
  queue = (await fanout.call("h1", "POST", "/v1/queues", { body: { name: "admission" } })).body.queue.id;
});
afterAll(async () => fanout?.stop());

type Send = (method: string, path: string, headers: [string, string][], body?: string) => Promise<Outcome>;

function sender(proto: Proto): { send: Send; close: () => void } {
  if (proto === "h2") {
    const client = new H2Client(fanout.url);
    const send: Send = async (method, path, headers, body) => {
      const outcome = await client.send({ ":method": method, ":path": path, ...Object.fromEntries(headers) }, body);
      if (outcome === "refused") throw new Error("node:http2 refused the request");
      return outcome;
    };
    return { send, close: () => client.close() };
  }
  const connection = new H1Connection(fanout.url);
  const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`;
  // Without a declared length a body goes chunked, as the body of no length does over HTTP/2.
  const send: Send = (method, path, headers, body) => {
    const framing: [string, string][] = body === undefined ? [] : headers.some(([n]) => n === "content-length") ? [] : [["transfer-encoding", "chunked"]];
    const text = body === undefined || framing.length === 0 ? body : chunk(body);
    return connection.send(requestBytes(method, path, [["host", "localhost"], ...framing, ...headers], text));
  };
  return { send, close: () => connection.close() };
}

const json: [string, string][] = [["content-type", "application/json"]];
const deep = `{"data":${"[".repeat(65)}${"]".repeat(65)}}`;
const answerOf = (o: Outcome) => ({ status: o.status, detail: JSON.parse(o.text || "{}").detail });

for (const proto of PROTOS) {
  describe(`over ${proto}`, () => {
    test("an over-deep body is 400 before the key is looked at: no key, a wrong key, hot route, app, Idempotency-Key", async () => {
      const { send, close } = sender(proto);
      try {
        const paths = [`/v1/queues/${queue}/messages`, `/v1/queues/${queue}/messages?via=app`, "/v1/queues"];
        const keys: [string, string][][] = [[], [["x-api-key", "wrong-key"]], [["x-api-key", fanout.key]]];
        for (const path of paths) {
          for (const key of keys) {
            for (const idempotency of [[], [["idempotency-key", crypto.randomUUID()]]] as [string, string][][]) {
              const reply = await send("POST", path, [...json, ...key, ...idempotency], deep);
              expect({ path, key: key.length, idempotency: idempotency.length, ...answerOf(reply) })
                .toEqual({ path, key: key.length, idempotency: idempotency.length, status: 400, detail: "The body nests arrays and objects deeper than 64 levels." });
            }
          }
        }
        // None of the wrong keys above counted toward the lockout (two failures lock): their bodies were refused first.
        expect((await fanout.call(proto, "POST", `/v1/queues/${queue}/messages`, { body: { data: 1 } })).status).toBe(200);
      } finally {
        close();
      }
    });

    test("a body of no declared length is bounded as it is read, on the hot route and the app, key or none", async () => {
      const { send, close } = sender(proto);
      try {
        const body = JSON.stringify({ data: "x".repeat(1024 * 1024) });
        for (const path of [`/v1/queues/${queue}/messages`, `/v1/queues/${queue}/messages?via=app`]) {
          for (const key of [[], [["x-api-key", fanout.key]]] as [string, string][][]) {
            const reply = await send("POST", path, [...json, ...key], body);
            expect({ path, ...answerOf(reply) }).toEqual({ path, status: 413, detail: "Request bodies are limited to 1048576 bytes." });
          }
        }
      } finally {
        close();
      }
    });
  });
}

test("over HTTP/2, a body with neither a length nor a type is 415, as it is over HTTP/1.1; no message is stored", async () => {
  const client = new H2Client(fanout.url);
  const h1 = new H1Connection(fanout.url);
  try {
    for (const path of [`/v1/queues/${queue}/messages`, `/v1/queues/${queue}/messages?via=app`]) {
      const body = JSON.stringify({ data: { untyped: true } });
      const h2 = await client.send({ ":method": "POST", ":path": path, "x-api-key": fanout.key }, body);
      const plain = await h1.send(requestBytes("POST", path, [["host", "localhost"], ["x-api-key", fanout.key], ["content-length", String(body.length)]], body));
      for (const reply of [h2 === "refused" ? null : h2, plain]) {
        expect(reply && { path, ...answerOf(reply) }).toEqual({ path, status: 415, detail: "Request bodies must be application/json." });
      }
      // Without a body, the same request publishes null data on both.
      const empty = await client.send({ ":method": "POST", ":path": path, "x-api-key": fanout.key });
      expect(empty !== "refused" && empty.status).toBe(200);
    }
    const listed = await fanout.call("h1", "GET", `/v1/queues/${queue}/messages?per_page=100`);
    for (const { id } of listed.body.messages) {
      const message = await fanout.call("h1", "GET", `/v1/queues/${queue}/messages/${id}`);
      expect(message.body.message.data).not.toEqual({ untyped: true });
    }
  } finally {
    client.close();
    h1.close();
  }
});
