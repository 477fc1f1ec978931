/**
 * Child processes of the bench, bounded in time. Every child is registered here and killed (SIGKILL) when the
 * bench exits for any reason: normal end, error, SIGINT/SIGTERM or the global deadline. Children that are Bun
 * scripts of ours also exit on their own when their stdin closes (the bench died without cleaning up) and after
 * a time to live; the fanout binary runs under coreutils `timeout` for the same reason, since it cannot watch
 * its parent.
 */
import type { Subprocess } from "bun";
import { readdirSync, readFileSync, rmSync } from "node:fs";

export const BUN = process.execPath;
const children = new Set<Subprocess>();
const extraPids = new Set<number>();
const tempDirs = new Set<string>();
let cleaned = false;

export type Child = {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  output(): string;
  waitForLine(pattern: RegExp, ms: number): Promise<RegExpMatchArray>;
  stop(ms?: number): Promise<number | null>;
};

/** Spawns a child that is killed with the bench; its stdout and stderr are collected (bounded) for error reports. */
export function spawnChild(cmd: string[], opts: { env?: Record<string, string>; ttlMs: number; cwd?: string }): Child {
  const proc = Bun.spawn(cmd, {
    env: { ...inheritedEnv(), ...opts.env },
    cwd: opts.cwd,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    timeout: opts.ttlMs,
    killSignal: "SIGKILL",
  });
  children.add(proc);
  void proc.exited.then(() => children.delete(proc));
  let out = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out = (out + decoder.decode(chunk)).slice(-200_000); // keep the tail only
  };
  void collect(proc.stdout);
  void collect(proc.stderr);
  return {
    proc,
    output: () => out,
    waitForLine: (pattern, ms) => waitUntil(() => out.match(pattern) ?? undefined, ms, () => {
      if (proc.exitCode !== null) return `${cmd[0]} exited (${proc.exitCode}):\n${out.slice(-2000)}`;
      return null;
    }, () => `${cmd.join(" ").slice(0, 120)}: no line matching ${pattern} within ${ms} ms:\n${out.slice(-2000)}`),
    stop: (ms = 5000) => stopProcess(proc, ms),
  };
}

/** The caller's environment without FANOUT_* settings, so a variable left in the shell cannot change a run. */
function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter(([k, v]) => !k.startsWith("FANOUT_") && v !== undefined)) as Record<string, string>;
}

/** SIGTERM, then SIGKILL after `ms`: a graceful stop is tried first so the database closes cleanly. */
export async function stopProcess(proc: Subprocess, ms: number): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), ms);
  await proc.exited;
  clearTimeout(timer);
  return proc.exitCode;
}

/** Polls `check` every 5 ms until it gives a value; `fatal` ends the wait early with an error (a child died). */
export async function waitUntil<T>(check: () => T | undefined | Promise<T | undefined>, ms: number,
  fatal: () => string | null, why: () => string, pollMs = 5): Promise<T> {
  const end = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    const dead = fatal();
    if (dead) throw new Error(dead);
    if (performance.now() > end) throw new Error(why());
    await Bun.sleep(pollMs);
  }
}

/** A grandchild (fanout under `timeout`) is not in `children`, so it is killed by pid as well; it is untracked
 * once it has exited, and killAll checks its command line first, so a reused pid is never hit. */
export function trackPid(pid: number): void {
  extraPids.add(pid);
}

export function untrackPid(pid: number): void {
  extraPids.delete(pid);
}

export function isOurs(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("fanout");
  } catch {
    return false; // gone already
  }
}

export function trackTempDir(dir: string): void {
  tempDirs.add(dir);
}

/** The pid whose parent is `ppid` (the command `timeout` runs); Linux /proc, no /proc/<pid>/children needed. */
export function childPidOf(ppid: number): number | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === ppid) return Number(name);
    } catch {
      // the process ended between readdir and read: not the one we look for
    }
  }
  return undefined;
}

/** Synchronous, so it also works from the `exit` event. Idempotent. */
export function killAll(): void {
  if (cleaned) return;
  cleaned = true;
  for (const proc of children) proc.kill("SIGKILL");
  for (const pid of extraPids) {
    if (!isOurs(pid)) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone, which is the goal
    }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

/** Installs the exit paths: every way out of the bench goes through killAll, and the deadline bounds the run. */
export function installCleanup(deadlineMs: number): () => void {
  process.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => {
      console.error(`\nbench: ${signal}, stopping children`);
      killAll();
      process.exit(130);
    });
  }
  process.on("uncaughtException", (e) => {
    console.error("bench: uncaught", e);
    killAll();
    process.exit(1);
  });
  process.on("unhandledRejection", (e) => {
    console.error("bench: unhandled rejection", e);
    killAll();
    process.exit(1);
  });
  const timer = setTimeout(() => {
    console.error(`bench: deadline of ${Math.round(deadlineMs / 1000)} s passed, stopping`);
    killAll();
    process.exit(3);
  }, deadlineMs);
  return () => clearTimeout(timer);
}
