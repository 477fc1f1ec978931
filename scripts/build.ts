/**
 * `npm run build`: one self-contained executable at dist/fanout, for this machine (entry points: compile.ts).
 *   --commit <label>   the commit the binary names, for a tree without git (a source tarball); else git's
 */
import { parseArgs } from "node:util";
import { compile } from "./compile.ts";

const { values } = parseArgs({ options: { commit: { type: "string" } } });
const started = performance.now();
const commit = await compile("dist/fanout", { commit: values.commit });
const size = Bun.file("dist/fanout").size;
console.log(`built dist/fanout (${commit}, ${(size / 1048576).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
