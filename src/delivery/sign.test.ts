import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { newSecret, sign, signatureHeader } from "./sign";

const body = JSON.stringify({ id: "msg_1", name: "order.created", data: { total: 42, note: "é ✓" } });

function headersFor(signature: string, msgId: string, ts: number): Record<string, string> {
  return { "webhook-id": msgId, "webhook-timestamp": String(ts), "webhook-signature": signature };
}

describe("newSecret", () => {
  test("is whsec_ + base64 of 32 bytes, different each time", () => {
    const a = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(a.slice("whsec_".length), "base64").length).toBe(32);
    expect(newSecret()).not.toBe(a);
  });
});

describe("sign", () => {
  test("matches a known Standard Webhooks vector", () => {
    // Vector from the standardwebhooks reference test suite.
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const payload = '{"test": 2432232314}';
    expect(sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, payload)).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });

  test("the body's UTF-8 bytes sign as its text does", () => {
    const secret = newSecret();
    const ts = Math.floor(Date.now() / 1000);
    const bytes = Buffer.from(body, "utf8");
    expect(bytes.length).toBeGreaterThan(body.length); // "é ✓": bytes and characters differ
    expect(sign(secret, "msg_abc", ts, bytes)).toBe(sign(secret, "msg_abc", ts, body));
    const headers = headersFor(signatureHeader([secret], "msg_abc", ts, bytes), "msg_abc", ts);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  test("verifies with the standardwebhooks library", () => {
    const secret = newSecret();
    const ts = Math.floor(Date.now() / 1000);
    const headers = headersFor(sign(secret, "msg_abc", ts, body), "msg_abc", ts);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  test("a changed body or id does not verify", () => {
    const secret = newSecret();
    const ts = Math.floor(Date.now() / 1000);
    const signature = sign(secret, "msg_abc", ts, body);
    expect(() => new Webhook(secret).verify(body + " ", headersFor(signature, "msg_abc", ts))).toThrow();
    expect(() => new Webhook(secret).verify(body, headersFor(signature, "msg_abd", ts))).toThrow();
  });

  test("refuses a secret without key material", () => {
    expect(() => sign("whsec_", "msg_abc", 1, body)).toThrow();
  });
});

describe("signatureHeader", () => {
  test("a rotated header verifies with the old and with the new secret, not with another", () => {
    const oldSecret = newSecret();
    const newSecretValue = newSecret();
    const ts = Math.floor(Date.now() / 1000);
    const header = signatureHeader([newSecretValue, oldSecret], "msg_rot", ts, body);
    expect(header.split(" ")).toHaveLength(2);
    for (const secret of [oldSecret, newSecretValue]) {
      expect(new Webhook(secret).verify(body, headersFor(header, "msg_rot", ts))).toEqual(JSON.parse(body));
    }
    expect(() => new Webhook(newSecret()).verify(body, headersFor(header, "msg_rot", ts))).toThrow();
  });
});
