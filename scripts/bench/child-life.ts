/**
 * For the bench's own child processes: exit when the bench goes away (stdin reaches EOF when the parent dies,
 * even by SIGKILL) and after a time to live, so no helper outlives a broken run.
 */
export function exitWithParent(ttlMs: number): void {
  setTimeout(() => process.exit(0), ttlMs).unref();
  void (async () => {
    for await (const _ of Bun.stdin.stream()) {
      // the bench never writes; data would only mean a caller we do not know, and is ignored
    }
    process.exit(0);
  })();
}

/** `--name value` pairs from argv, for the helper scripts' few settings. */
export function argMap(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < argv.length; i += 2) out.set(argv[i]!.replace(/^--/, ""), argv[i + 1]!);
  return out;
}
