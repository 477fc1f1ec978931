import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { attempt, bodyOf, headersOf, judge, payloadOf } from "./send";
import { newSecret } from "./sign";
import type { ClaimedDelivery } from "../store/deliveries";
import type { SendRequest, SendResult } from "./egress";
import { makeTargetPolicy } from "./egress";
import { SocketPool } from "./http1/client";

const now = 1_700_000_000_123;
const secret = newSecret();
const delivery = (over: Partial<ClaimedDelivery["message"]> = {}, attempts = 0): ClaimedDelivery => ({
  id: 7,
  token: "w:1",
  attempt: attempts,
  listener: { seq: 3, id: "lst_1", orgId: "org_1", notifyUrl: "http://127.0.0.1:9/notify", secrets: [secret], held: false, headers: null, concurrency: null, rateLimit: null, fifo: false },
  message: { id: "msg_1", name: "order.created", queue: { id: "q_1", name: "orders \"eu\"" }, data: '{"total":42,"s":"é"}', createdAt: now, ...over },
  startAt: null,
});

describe("payloadOf", () => {
  test("is the documented JSON with data spliced in as stored", () => {
    expect(JSON.parse(payloadOf(delivery().message))).toEqual({
      id: "msg_1", name: "order.created", queue: { id: "q_1", name: "orders \"eu\"" }, data: { total: 42, s: "é" }, created_at: now,
    });
  });

  test("keeps a null name, string data and null data", () => {
    expect(JSON.parse(payloadOf(delivery({ name: null, data: '"{\\"a\\":1}"' }).message))).toMatchObject({ name: null, data: '{"a":1}' });
    expect(JSON.parse(payloadOf(delivery({ data: "null" }).message)).data).toBeNull();
  });
});

describe("bodyOf", () => {
  test("is the payload's UTF-8 bytes, made once per message object", () => {
    const message = delivery().message;
    expect(bodyOf(message).toString("utf8")).toBe(payloadOf(message));
    expect(bodyOf(message)).toBe(bodyOf(message));
    // Another object (another claim's read of the message, renamed since) gets its own bytes.
    const renamed = delivery({ name: "order.renamed" }).message;
    expect(JSON.parse(bodyOf(renamed).toString("utf8")).name).toBe("order.renamed");
  });
});

describe("headersOf", () => {
  test("signs so that the standardwebhooks library verifies, with one signature per secret", () => {
    const body = payloadOf(delivery().message);
    const d = delivery();
    const old = newSecret();
    d.listener.secrets = [secret, old];
    const { shared, own } = headersOf(d, body, Date.now(), "1.2.3");
    const headers = { ...shared, ...own };
    expect(headers).toMatchObject({ "content-type": "application/json", "user-agent": "fanout/1.2.3", "webhook-id": "msg_1" });
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const s of [secret, old]) expect(new Webhook(s).verify(body, headers)).toMatchObject({ id: "msg_1" });
  });

  test("the timestamp is the attempt's time in whole seconds", () => {
    expect(headersOf(delivery(), "{}", now, "1").own["webhook-timestamp"]).toBe("1700000000");
  });
});

describe("judge", () => {
  const response = (status: number, retryAfter: string | null = null): SendResult => ({ status, durationMs: 12, retryAfter, bodySnippet: "body" });

  test("any 2xx acknowledges", () => {
    for (const status of [200, 202, 204, 299]) expect(judge(response(status), now).outcome).toEqual({ kind: "ack" });
  });

  test("other statuses fail; a redirect says it was not followed", () => {
    expect(judge(response(500), now)).toEqual({
      outcome: { kind: "fail" }, record: { attemptedAt: now, statusCode: 500, durationMs: 12, error: null, response: "body" },
    });
    expect(judge(response(301), now).record.error).toBe("redirect not followed");
    expect(judge(response(100), now).outcome.kind).toBe("fail");
  });

  test("Retry-After is passed on in milliseconds", () => {
    expect(judge(response(429, "3"), now).outcome).toEqual({ kind: "fail", retryAfterMs: 3000 });
  });

  test("no response is a failure with its error", () => {
    expect(judge({ status: null, durationMs: 500, error: "timeout after 500ms", kind: "timeout" }, now)).toEqual({
      outcome: { kind: "fail" }, record: { attemptedAt: now, statusCode: null, durationMs: 500, error: "timeout after 500ms", response: null },
    });
  });
});

describe("attempt", () => {
  const policy = makeTargetPolicy(["127.0.0.1/32"]);
  const pool = new SocketPool(); // never connects: `send` is a stub
  const run = async (result: SendResult, attempts: number, schedule = [1000, 2000]) => {
    const sent: SendRequest[] = [];
    const send = async (r: SendRequest) => (sent.push(r), result);
    const out = await attempt(delivery({}, attempts), {
      send, now: () => now, version: "9", scheduleMs: schedule, random: () => 0.5, request: { policy, timeoutMs: 500, pool },
    });
    return { out, sent };
  };

  test("posts the payload to the notify URL with the policy and timeout, on the listener's own agent", async () => {
    const { sent } = await run({ status: 200, durationMs: 1, retryAfter: null, bodySnippet: "" }, 0);
    expect(sent[0]).toMatchObject({ url: "http://127.0.0.1:9/notify", policy, timeoutMs: 500, poolKey: "notify:3" });
    expect(sent[0]!.pool).toBe(pool);
    expect(Buffer.from(sent[0]!.body).toString("utf8")).toBe(payloadOf(delivery().message));
  });

  test("numbers the attempt and settles it by the retry schedule", async () => {
    const failed = { status: 503, durationMs: 1, retryAfter: null, bodySnippet: "" } as const;
    expect((await run({ status: 204, durationMs: 1, retryAfter: null, bodySnippet: "" }, 0)).out).toMatchObject({ attempt: 1, next: { state: "acknowledged" } });
    expect((await run(failed, 0)).out).toMatchObject({ attempt: 1, next: { state: "pending", at: now + 1000 } });
    expect((await run(failed, 1)).out).toMatchObject({ attempt: 2, next: { state: "pending", at: now + 2000 } });
    expect((await run(failed, 2)).out).toMatchObject({ attempt: 3, next: { state: "missed" } });
  });
});
