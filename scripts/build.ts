/**
 * `npm run build`: one self-contained executable at dist/fanout. The delivery worker and the checkpoint thread
 * are further entry points, because `bun build --compile` only bundles files it is told about and
 * `new Worker(url)` is resolved at run time.
 *
 * Identifiers are not minified: Elysia compiles its validators from generated source that names identifiers, and
 * with `--minify-identifiers` query bounds went unchecked in the binary (`?page=1e20` reached SQLite as a 500;
 * elysiajs/elysia#724, #1711). Whitespace and syntax minification are safe and keep most of the size gain.
 */
import { $ } from "bun";
import { existsSync } from "node:fs";

const entries = ["src/main.ts", "src/delivery/worker.ts", "src/store/sqlite/checkpoint-thread.ts"].filter((f) => existsSync(f));
const started = performance.now();
await $`${process.execPath} build --compile --minify-whitespace --minify-syntax ${entries} --outfile dist/fanout`.quiet();
const size = Bun.file("dist/fanout").size;
console.log(`built dist/fanout (${(size / 1048576).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
