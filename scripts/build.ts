/**
 * `npm run build`: one self-contained executable at dist/fanout. The delivery worker and the checkpoint thread
 * are further entry points, because `bun build --compile` only bundles files it is told about and
 * `new Worker(url)` is resolved at run time.
 */
import { $ } from "bun";
import { existsSync } from "node:fs";

const entries = ["src/main.ts", "src/delivery/worker.ts", "src/store/sqlite/checkpoint-thread.ts"].filter((f) => existsSync(f));
const started = performance.now();
await $`${process.execPath} build --compile --minify ${entries} --outfile dist/fanout`.quiet();
const size = Bun.file("dist/fanout").size;
console.log(`built dist/fanout (${(size / 1048576).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
