/**
 * The commit the checkout at the repository's root is at, asked of git here rather than through src/version.ts, so
 * the version tests compare fanout's answer with git's own: `f982e31`, `f982e31-dirty` when tracked files differ
 * from it, null without git.
 */
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

export function checkedOut(): string | null {
  const git = (...args: string[]) => Bun.spawnSync(["git", "-C", ROOT, ...args], { stderr: "ignore" });
  let head;
  try {
    head = git("rev-parse", "--short=7", "HEAD");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null; // no git installed
    throw e;
  }
  if (head.exitCode !== 0) return null;
  const dirty = git("status", "--porcelain", "--untracked-files=no").stdout.toString().trim() !== "";
  return `${head.stdout.toString().trim()}${dirty ? "-dirty" : ""}`;
}

/** Whether `commit` (abbreviated, without `-dirty`) names a commit of this repository. */
export function isCommit(commit: string): boolean {
  return Bun.spawnSync(["git", "-C", ROOT, "cat-file", "-e", `${commit}^{commit}`], { stderr: "ignore" }).exitCode === 0;
}
