/**
 * Lockout after repeated failed authentications (docs/delivery.md), per client address: `attempts` failures
 * within `windowMs` lock the address for `lockMs`. The window is fixed, starting at the first failure, so one
 * small entry per address suffices; failures straddling two windows can reach 2 × attempts - 1 before a lock.
 * A success does not clear the count: otherwise anyone holding one valid key could interleave it with guesses
 * and never be locked.
 *
 * Memory is bounded so that a flood of addresses cannot exhaust it. Failure counts and locks live in two Maps,
 * each capped; the least recently touched entry is evicted first (Map order, re-inserted on every touch). Keeping
 * locks apart means a flood of single failures cannot evict a lock: it takes `attempts` failures from each of
 * `maxAddresses` other addresses to push one out.
 */
import ipaddr from "ipaddr.js";
import type { LockoutStore } from "../store/index.ts";
import type { Logger } from "../lib/log.ts";

export type LockoutOptions = { attempts: number; windowMs: number; lockMs: number; maxAddresses?: number };

export interface Lockout {
  /** Epoch ms until which `address` is locked, or 0 when it is not. */
  lockedUntil(address: string, now: number): number;
  /** False when no address is locked (expired locks may still count until they are looked up). */
  hasLocks(): boolean;
  /** Records one failed authentication; returns the lock's end when this failure locked the address, else 0. */
  fail(address: string, now: number): number | Promise<number>;
  readonly size: { failures: number; locks: number };
}

type Failures = { since: number; count: number };

function touch<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (map.has(key)) map.delete(key);
  else if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}

export function createLockout(options: LockoutOptions): Lockout {
  const max = options.maxAddresses ?? 100_000;
  const failures = new Map<string, Failures>();
  const locks = new Map<string, number>();

  function lockedUntil(address: string, now: number): number {
    const until = locks.get(address);
    if (until === undefined) return 0;
    if (until > now) return until;
    locks.delete(address);
    return 0;
  }

  return {
    lockedUntil,
    hasLocks: () => locks.size > 0,
    fail(address, now) {
      const current = failures.get(address);
      const entry = current && now - current.since < options.windowMs ? current : { since: now, count: 0 };
      entry.count++;
      if (entry.count < options.attempts) {
        touch(failures, address, entry, max);
        return 0;
      }
      failures.delete(address);
      const until = now + options.lockMs;
      touch(locks, address, until, max);
      return until;
    },
    get size() {
      return { failures: failures.size, locks: locks.size };
    },
  };
}

/**
 * The lockout of instances that share a database (PostgreSQL): failures are counted in the store, so every
 * instance counts toward one lock, and each instance keeps the locks in memory, as above, so a request is checked
 * without asking the database: the ones it took itself, the ones other instances announce, and all of them again
 * whenever announcements may have been missed. A failure that cannot be counted (the database unreachable) is
 * logged and the request still answered 401.
 */
export function createSharedLockout(store: LockoutStore, options: LockoutOptions, log: Logger): Lockout {
  const max = options.maxAddresses ?? 100_000;
  const locks = new Map<string, number>();
  const remember = (address: string, until: number) => {
    if (until > (locks.get(address) ?? 0)) touch(locks, address, until, max);
  };
  void store
    .watch({
      locked: remember,
      resync: () =>
        void store.locked(Date.now()).then(
          (all) => all.forEach((l) => remember(l.address, l.until)),
          (e) => log.warn("could not read the lockouts of other instances", { error: String(e) }),
        ),
    })
    .catch((e) => log.warn("could not subscribe to the lockouts of other instances", { error: String(e) }));
  return {
    lockedUntil(address, now) {
      const until = locks.get(address);
      if (until === undefined) return 0;
      if (until > now) return until;
      locks.delete(address);
      return 0;
    },
    hasLocks: () => locks.size > 0,
    async fail(address, now) {
      try {
        const until = await store.fail(address, options, now);
        if (until) remember(address, until);
        return until;
      } catch (e) {
        log.warn("could not count a failed authentication", { error: String(e) });
        return 0;
      }
    },
    get size() {
      return { failures: 0, locks: locks.size };
    },
  };
}

const MAX_ADDRESS_CHARS = 100;
const OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(\\.${OCTET}){3}$`);

/**
 * The key a client is counted under. With `trustProxy` it is the left-most X-Forwarded-For entry, the original
 * client as reported by the proxy chain; that entry is only trustworthy behind a proxy that overwrites the header
 * rather than appending to it. Without it, or when the header is absent, it is the socket's peer address.
 * IPv4-mapped IPv6 is folded to IPv4, and IPv6 is counted per /64, the block one subscriber usually holds, so
 * rotating addresses inside one's own block does not escape the lock. Text that is no address is used as given,
 * cut short, so it still counts and stays small.
 */
export function clientAddress(peer: string | null | undefined, forwardedFor: string | null, trustProxy: boolean): string {
  const forwarded = trustProxy ? forwardedFor?.split(",")[0]?.trim() : undefined;
  const raw = forwarded || peer || "unknown";
  // The common case, a socket's IPv4 peer, is already in the form ipaddr.js would print: no parse per request.
  if (CANONICAL_IPV4.test(raw)) return raw;
  if (!ipaddr.isValid(raw)) return raw.slice(0, MAX_ADDRESS_CHARS);
  const address = ipaddr.process(raw);
  if (address.kind() === "ipv4") return address.toString();
  const groups = (address as ipaddr.IPv6).toNormalizedString().split(":").slice(0, 4);
  return `${groups.join(":")}::/64`;
}
