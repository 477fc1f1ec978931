const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniform base62: bytes >= 248 are rejected so that `% 62` carries no bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export type IdKind = "org" | "key" | "queue" | "listener" | "message";
const PREFIX: Record<IdKind, string> = { org: "org", key: "key", queue: "q", listener: "lst", message: "msg" };

/** Ids are opaque to clients (SPEC 2.1); the prefix only helps a human reading logs. */
export function newId(kind: IdKind): string {
  return `${PREFIX[kind]}_${randomBase62(20)}`;
}

/** API key secrets: 32+ random bytes of entropy as `fo_` + base62 (43 chars ≈ 256 bits). */
export function newApiKeySecret(): string {
  return `fo_${randomBase62(43)}`;
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
