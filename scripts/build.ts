/** `npm run build`: one self-contained executable at dist/fanout, for this machine (entry points: compile.ts). */
import { compile } from "./compile.ts";

const started = performance.now();
await compile("dist/fanout");
const size = Bun.file("dist/fanout").size;
console.log(`built dist/fanout (${(size / 1048576).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
