import { describe, expect, test } from "bun:test";
import { openFileLimit, warnOnLowFileLimit } from "./file-limit.ts";
import type { Logger } from "./log.ts";

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             unlimited            unlimited            processes
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

function recorder(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => {}, error: () => {}, warn: (msg, fields) => warnings.push(`${msg} ${JSON.stringify(fields)}`) };
}

describe("open-file limit", () => {
  test("reads the soft limit from /proc/self/limits", () => {
    expect(openFileLimit(LIMITS)).toBe(1024);
    expect(openFileLimit(LIMITS.replace("1024 ", "unlimited "))).toBe(Infinity);
    expect(openFileLimit(null)).toBeNull();
    expect(openFileLimit("Limit Soft Hard\n")).toBeNull();
  });

  test("warns once below 4096 and not at or above it", () => {
    const low = recorder();
    warnOnLowFileLimit(low, 1024);
    expect(low.warnings).toHaveLength(1);
    expect(low.warnings[0]).toContain("LimitNOFILE=65536");
    expect(low.warnings[0]).toContain(`"limit":1024`);
    for (const limit of [4096, 65536, Infinity, null]) {
      const ok = recorder();
      warnOnLowFileLimit(ok, limit);
      expect(ok.warnings).toEqual([]);
    }
  });
});
