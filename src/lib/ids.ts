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

/** `n` in base62 with exactly `width` digits: same-width codes sort in ASCII order as their numbers do. */
export function base62(n: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++, n = Math.floor(n / 62)) out = ALPHABET[n % 62] + out;
  return out;
}

export const fromBase62 = (text: string) => [...text].reduce((n, c) => n * 62 + ALPHABET.indexOf(c), 0);

export type IdKind = "org" | "key" | "queue" | "listener" | "message";
const PREFIX: Record<IdKind, string> = { org: "org", key: "key", queue: "q", listener: "lst", message: "msg" };

/**
 * Ids are opaque to clients (SPEC 2.1); the prefix only helps a human reading logs. They start with the creation
 * time (8 base62 digits of epoch ms), so new rows append at the right edge of the id index instead of dirtying a
 * random leaf page per insert; 12 random digits (71 bits) keep them unguessable and unique.
 */
export function newId(kind: IdKind, now: number): string {
  return `${PREFIX[kind]}_${base62(now, 8)}${randomBase62(12)}`;
}

/** API key secrets: 32+ random bytes of entropy as `fo_` + base62 (43 chars ≈ 256 bits). */
export function newApiKeySecret(): string {
  return `fo_${randomBase62(43)}`;
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
