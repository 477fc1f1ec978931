/**
 * What this fanout is: the release's semver (package.json, bumped with each release) and the commit it was built
 * from, so two builds of one release can be told apart. scripts/compile.ts embeds the commit into the binary, which
 * then needs no git; run from source, the commit is read from the checkout. Deliveries' User-Agent keeps the plain
 * semver: receivers need no commit.
 */
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };

/** Bundled into the binary at build time, so `fanout version` needs no file beside it. */
export const VERSION: string = pkg.version;

/** Replaced by a string literal in a compiled binary (`bun build --define`); never defined when run from source. */
declare const FANOUT_BUILD_COMMIT: string | undefined;
/** The identifier scripts/compile.ts defines. */
export const COMMIT_DEFINE = "FANOUT_BUILD_COMMIT";

/** What a source run without git says in place of a commit. */
const NO_GIT = "source";
let commit: string | undefined;

/** The commit this fanout was built from (`f982e31`, `f982e31-dirty`), or `source` for a source tree without git. */
export function buildCommit(): string {
  commit ??= typeof FANOUT_BUILD_COMMIT === "string" ? FANOUT_BUILD_COMMIT : (checkoutCommit(join(import.meta.dir, "..")) ?? NO_GIT);
  return commit;
}

/** `0.2.0 (105d7ea)`: what `fanout version` prints after the name, and what a migrated database records. */
export function fullVersion(): string {
  return `${VERSION} (${buildCommit()})`;
}

/**
 * The abbreviated commit checked out at `dir`, with `-dirty` when tracked files differ from it (untracked ones do
 * not count, as with `git describe --dirty`); null without git or outside a repository.
 */
export function checkoutCommit(dir: string): string | null {
  let run;
  try {
    // --exclude '*' ignores tags: the answer is the commit alone, however the tree is tagged.
    run = Bun.spawnSync(["git", "-C", dir, "describe", "--always", "--dirty", "--abbrev=7", "--exclude", "*"], { stdout: "pipe", stderr: "ignore" });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null; // no git installed
    throw e;
  }
  const described = run.stdout.toString().trim();
  return run.exitCode === 0 && described ? described : null;
}
