import { describe, expect, test } from "bun:test";
import ipaddr from "ipaddr.js";
import { clientAddress, createLockout } from "./lockout.ts";

const T0 = 1_700_000_000_000;
const options = { attempts: 3, windowMs: 60_000, lockMs: 300_000 };

describe("lockout", () => {
  test("locks after `attempts` failures within the window, until the lock time has passed", () => {
    const lockout = createLockout(options);
    expect(lockout.fail("1.2.3.4", T0)).toBe(0);
    expect(lockout.fail("1.2.3.4", T0 + 1_000)).toBe(0);
    expect(lockout.lockedUntil("1.2.3.4", T0 + 1_000)).toBe(0);
    expect(lockout.fail("1.2.3.4", T0 + 2_000)).toBe(T0 + 302_000);
    expect(lockout.lockedUntil("1.2.3.4", T0 + 301_999)).toBe(T0 + 302_000);
    expect(lockout.lockedUntil("1.2.3.4", T0 + 302_000)).toBe(0);
    expect(lockout.size.locks).toBe(0);
  });

  test("forgets failures older than the window", () => {
    const lockout = createLockout(options);
    lockout.fail("a", T0);
    lockout.fail("a", T0 + 1);
    expect(lockout.fail("a", T0 + 60_000)).toBe(0);
    expect(lockout.lockedUntil("a", T0 + 60_000)).toBe(0);
  });

  test("counts afresh after a lock ends", () => {
    const lockout = createLockout({ ...options, attempts: 2 });
    lockout.fail("a", T0);
    lockout.fail("a", T0);
    const after = T0 + options.lockMs;
    expect(lockout.lockedUntil("a", after)).toBe(0);
    expect(lockout.fail("a", after)).toBe(0);
    expect(lockout.fail("a", after)).toBe(after + options.lockMs);
  });

  test("does not affect other addresses", () => {
    const lockout = createLockout({ ...options, attempts: 1 });
    lockout.fail("a", T0);
    expect(lockout.lockedUntil("a", T0)).toBeGreaterThan(0);
    expect(lockout.lockedUntil("b", T0)).toBe(0);
  });

  test("stays bounded under a flood, and single failures cannot evict a lock", () => {
    const lockout = createLockout({ ...options, attempts: 2, maxAddresses: 100 });
    lockout.fail("attacker", T0);
    lockout.fail("attacker", T0);
    for (let i = 0; i < 10_000; i++) lockout.fail(`flood-${i}`, T0);
    expect(lockout.size.failures).toBe(100);
    expect(lockout.lockedUntil("attacker", T0)).toBeGreaterThan(0);
    for (let i = 0; i < 500; i++) lockout.fail(`locks-${i}`, T0), lockout.fail(`locks-${i}`, T0);
    expect(lockout.size.locks).toBe(100);
    expect(lockout.lockedUntil("attacker", T0)).toBe(0);
    expect(lockout.lockedUntil("locks-499", T0)).toBeGreaterThan(0);
  });
});

describe("client address", () => {
  test("is the socket peer unless the proxy is trusted", () => {
    expect(clientAddress("10.0.0.1", "1.2.3.4", false)).toBe("10.0.0.1");
    expect(clientAddress("10.0.0.1", " 1.2.3.4 , 10.0.0.9", true)).toBe("1.2.3.4");
    expect(clientAddress("10.0.0.1", null, true)).toBe("10.0.0.1");
    expect(clientAddress("10.0.0.1", "", true)).toBe("10.0.0.1");
    expect(clientAddress(null, null, false)).toBe("unknown");
  });

  test("folds IPv4-mapped IPv6 and counts IPv6 per /64", () => {
    expect(clientAddress("::ffff:127.0.0.1", null, false)).toBe("127.0.0.1");
    expect(clientAddress("2001:db8:1:2:3:4:5:6", null, false)).toBe("2001:db8:1:2::/64");
    expect(clientAddress("2001:db8:1:2::99", null, false)).toBe("2001:db8:1:2::/64");
  });

  test("counts every spelling of an IPv4 address as the one address ipaddr.js prints", () => {
    // Canonical forms take a fast path; the rest must still be normalized, so "010.0.0.1" cannot dodge a lock on 8.0.0.1.
    const spellings = ["127.0.0.1", "0.0.0.0", "255.255.255.255", "10.20.30.40", "010.0.0.1", "0x7f.0.0.1", "127.1", "1.2.3.04", "256.1.1.1"];
    for (const raw of spellings) {
      const expected = ipaddr.isValid(raw) ? ipaddr.process(raw).toString() : raw;
      expect(clientAddress(raw, null, false)).toBe(expected);
    }
    expect(clientAddress("010.0.0.1", null, false)).toBe("8.0.0.1");
  });

  test("keeps text that is no address, cut short", () => {
    expect(clientAddress(null, "x".repeat(500), true)).toHaveLength(100);
  });
});
