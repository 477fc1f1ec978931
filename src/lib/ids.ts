const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Random bytes are drawn from a pool refilled 4 KiB at a time: a getRandomValues call and a fresh array per id
 * were most of an id's cost, and a publish makes two ids (its message and its usage event).
 */
const pool = new Uint8Array(4096);
let poolAt = pool.length;

function randomByte(): number {
  if (poolAt === pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** Uniform base62: bytes >= 248 are rejected so that `% 62` carries no bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** The last code made, by width: ids made in the same millisecond share their time digits. */
const lastCode = new Map<number, { n: number; code: string }>();

/** `n` in base62 with exactly `width` digits: same-width codes sort in ASCII order as their numbers do. */
export function base62(n: number, width: number): string {
  const last = lastCode.get(width);
  if (last?.n === n) return last.code;
  let code = "";
  for (let i = 0, m = n; i < width; i++, m = Math.floor(m / 62)) code = ALPHABET[m % 62] + code;
  lastCode.set(width, { n, code });
  return code;
}

export function fromBase62(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) n = n * 62 + ALPHABET.indexOf(text[i]!);
  return n;
}

export type IdKind = "org" | "key" | "queue" | "listener" | "message" | "portal_session";
const PREFIX: Record<IdKind, string> = { org: "org", key: "key", queue: "q", listener: "lst", message: "msg", portal_session: "ps" };

/**
 * Ids are opaque to clients (docs/api.md); the prefix only helps a human reading logs. They start with the creation
 * time (8 base62 digits of epoch ms), so new rows append at the right edge of the id index instead of dirtying a
 * random leaf page per insert; 12 random digits (71 bits) keep them unguessable and unique.
 */
export function newId(kind: IdKind, now: number): string {
  return `${PREFIX[kind]}_${base62(now, 8)}${randomBase62(12)}`;
}

/** Ids sort by their time: every id of `kind` made before `ms` sorts below this, every one made at or after it not. */
export function idFloor(kind: IdKind, ms: number): string {
  return `${PREFIX[kind]}_${base62(Math.max(0, Math.min(ms, 62 ** 8 - 1)), 8)}`;
}

/** The creation time (epoch ms) an id made by `newId` starts with. */
export function idTime(id: string): number {
  const at = id.indexOf("_") + 1;
  return fromBase62(id.slice(at, at + 8));
}

/** API key secrets: 32+ random bytes of entropy as `fo_` + base62 (43 chars ≈ 256 bits). */
export function newApiKeySecret(): string {
  return `fo_${randomBase62(43)}`;
}

/** Portal session tokens (docs/portal.md): as strong as a key, told apart by their prefix. */
export const PORTAL_TOKEN_PREFIX = "fop_";
export function newPortalToken(): string {
  return `${PORTAL_TOKEN_PREFIX}${randomBase62(43)}`;
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
