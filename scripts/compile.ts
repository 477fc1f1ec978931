/**
 * One `bun build --compile` for dist/fanout (scripts/build.ts) and for every release target (scripts/release.ts),
 * so both bundle the same entry points with the same flags. The delivery worker and the checkpoint thread are
 * entry points of their own: `bun build --compile` bundles only files it is told about, and `new Worker(url)` is
 * resolved at run time.
 */
import { $ } from "bun";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");

export const ENTRY_POINTS = ["src/main.ts", "src/delivery/worker.ts", "src/store/sqlite/checkpoint-thread.ts"];

/** Compiles into `outfile` for `target` (such as `bun-linux-arm64`), or for this machine when no target is given. */
export async function compile(outfile: string, target?: string): Promise<void> {
  const targetFlag = target ? [`--target=${target}`] : [];
  await $`${process.execPath} build --compile --minify ${targetFlag} ${ENTRY_POINTS} --outfile ${outfile}`.cwd(ROOT).quiet();
}
