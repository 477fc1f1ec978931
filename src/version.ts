import pkg from "../package.json" with { type: "json" };

/** Bundled into the binary at build time, so `fanout version` needs no file beside it. */
export const VERSION: string = pkg.version;
