/**
 * One `bun build --compile` for dist/fanout (scripts/build.ts) and for every release target (scripts/release.ts),
 * so both bundle the same entry points with the same flags. The delivery worker and the checkpoint thread are
 * entry points of their own: `bun build --compile` bundles only files it is told about, and `new Worker(url)` is
 * resolved at run time.
 *
 * Identifiers are not minified: Elysia compiles its validators from generated source that names identifiers, and
 * with `--minify-identifiers` query bounds went unchecked in the binary (`?page=1e20` reached SQLite as a 500;
 * elysiajs/elysia#724, #1711). Whitespace and syntax minification are safe and keep most of the size gain.
 */
import { $ } from "bun";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");

export const ENTRY_POINTS = ["src/main.ts", "src/delivery/worker.ts", "src/store/sqlite/checkpoint-thread.ts"];

/** Compiles into `outfile` for `target` (such as `bun-linux-arm64`), or for this machine when no target is given. */
export async function compile(outfile: string, target?: string): Promise<void> {
  const targetFlag = target ? [`--target=${target}`] : [];
  await $`${process.execPath} build --compile --minify-whitespace --minify-syntax ${targetFlag} ${ENTRY_POINTS} --outfile ${outfile}`.cwd(ROOT).quiet();
}
