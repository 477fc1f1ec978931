/**
 * The URL of a thread's entry file, seen from the module that starts the thread (`moduleUrl`, its
 * import.meta.url, whose path under src/ is `from`). From source that is a file of the tree. In a binary from
 * `bun build --compile` every bundled module shares the main entry's import.meta.url
 * (file:///$bunfs/root/<outfile>), and each further entry point sits under the entry points' common root (src/).
 * So every thread's entry must also be listed in scripts/build.ts.
 */
export function threadEntry(moduleUrl: string, from: string, entry: string): string {
  if (moduleUrl.endsWith(`/${from}`)) return new URL(entry, moduleUrl.slice(0, -from.length)).href;
  return new URL(`./${entry}`, moduleUrl).href;
}
