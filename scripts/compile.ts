/**
 * One `bun build --compile` for dist/fanout (scripts/build.ts) and for every release target (scripts/release.ts),
 * so both bundle the same entry points with the same flags. The delivery worker and the checkpoint thread are
 * entry points of their own: `bun build --compile` bundles only files it is told about, and `new Worker(url)` is
 * resolved at run time. The commit is defined as a constant (src/version.ts), so the binary tells which commit it
 * is without git.
 *
 * Identifiers are not minified: Elysia compiles its validators from generated source that names identifiers, and
 * with `--minify-identifiers` query bounds went unchecked in the binary (`?page=1e20` reached SQLite as a 500;
 * elysiajs/elysia#724, #1711). Whitespace and syntax minification are safe and keep most of the size gain.
 */
import { $ } from "bun";
import { join } from "node:path";
import { checkoutCommit, COMMIT_DEFINE } from "../src/version.ts";

const ROOT = join(import.meta.dir, "..");

export const ENTRY_POINTS = ["src/main.ts", "src/delivery/worker.ts", "src/store/sqlite/checkpoint-thread.ts"];

export type CompileOptions = {
  /** `bun-<os>-<arch>` (such as `bun-linux-arm64`); this machine's when not given. */
  target?: string;
  /** The commit `fanout version` names; by default the checkout's (`unknown` without git, e.g. from a tarball). */
  commit?: string;
};

/** Compiles into `outfile`; returns the commit embedded, which the binary prints with its version. */
export async function compile(outfile: string, options: CompileOptions = {}): Promise<string> {
  const targetFlag = options.target ? [`--target=${options.target}`] : [];
  const commit = options.commit ?? checkoutCommit(ROOT) ?? "unknown";
  const define = `${COMMIT_DEFINE}=${JSON.stringify(commit)}`;
  await $`${process.execPath} build --compile --minify-whitespace --minify-syntax --define ${define} ${targetFlag} ${ENTRY_POINTS} --outfile ${outfile}`.cwd(ROOT).quiet();
  return commit;
}
