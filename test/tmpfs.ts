/**
 * A small tmpfs for tests of a full disk: mounted on a fresh directory (root, or CAP_SYS_ADMIN, is needed), filled to
 * the brim by a filler file, freed again. Where mounting is not permitted, `mountTmpfs` returns null after one line
 * saying so, and the caller skips; under CI=true it throws instead, so CI cannot pass by skipping.
 */
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, rmdirSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type Tmpfs = {
  dir: string;
  /** Appends to the filler file until the file system has no byte left; returns how many bytes it added. */
  fill(): number;
  /** Deletes the filler file: the space is back. */
  free(): void;
  /** Unmounts (lazily if a process still holds a file there) and removes the directory. Safe to call twice. */
  unmount(): void;
};

const CHUNK = Buffer.alloc(64 * 1024, 0x2e);

export function mountTmpfs(sizeBytes: number, why: string): Tmpfs | null {
  const dir = mkdtempSync(join(tmpdir(), "fanout-tmpfs-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", dir], { encoding: "utf8" });
  if (mounted.status !== 0) {
    rmdirSync(dir);
    const reason = (mounted.stderr || String(mounted.error)).trim().split("\n")[0];
    const line = `cannot mount a tmpfs (${reason}); ${why} needs root or CAP_SYS_ADMIN`;
    if (process.env.CI === "true") throw new Error(line);
    console.warn(`skipped: ${line}`);
    return null;
  }
  const filler = join(dir, "filler");
  let done = false;
  return {
    dir,
    fill() {
      const fd = openSync(filler, "a");
      let added = 0;
      try {
        for (let size = CHUNK.length; size > 0; ) {
          try {
            added += writeSync(fd, CHUNK, 0, size);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
            size >>= 1; // the last pages: smaller and smaller writes, down to one byte
          }
        }
      } finally {
        closeSync(fd);
      }
      return added;
    },
    free: () => rmSync(filler, { force: true }),
    unmount() {
      if (done) return;
      done = true;
      if (spawnSync("umount", [dir]).status !== 0) spawnSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
