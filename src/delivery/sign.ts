// Standard Webhooks signing (https://www.standardwebhooks.com):
//   signed content = "<webhook-id>.<webhook-timestamp>.<body>"
//   webhook-signature = "v1,<base64 HMAC-SHA256(signed content)>", several separated by spaces
// The key is the base64 text after "whsec_", decoded to bytes; signing with the text itself would produce
// signatures no Standard Webhooks verifier accepts.
import { randomBytes } from "node:crypto";

const SECRET_PREFIX = "whsec_";

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** Decoded keys by secret text: a listener's deliveries all sign with the same few secrets. Bounded. */
const keys = new Map<string, Buffer>();
const MAX_KEYS = 10_000;

function secretKey(secret: string): Buffer {
  const known = keys.get(secret);
  if (known) return known;
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, "base64");
  // An empty key still yields a valid-looking HMAC, so a corrupted secret would sign silently.
  if (key.length === 0) throw new Error("webhook secret has no key material");
  if (keys.size >= MAX_KEYS) keys.clear();
  keys.set(secret, key);
  return key;
}

/**
 * Bun's native HMAC: the same bytes as node:crypto's createHmac, and faster (docs/performance.md). The body, text
 * or its UTF-8 bytes, is hashed after the prefix rather than copied into one string with it.
 */
export function sign(secret: string, msgId: string, timestampSec: number, body: string | Uint8Array): string {
  const mac = new Bun.CryptoHasher("sha256", secretKey(secret)).update(`${msgId}.${timestampSec}.`).update(body).digest("base64");
  return `v1,${mac}`;
}

// During rotation the old secret signs beside the new one, so receivers still holding the old secret
// keep verifying until they switch.
export function signatureHeader(secrets: string[], msgId: string, timestampSec: number, body: string | Uint8Array): string {
  return secrets.map((secret) => sign(secret, msgId, timestampSec, body)).join(" ");
}
