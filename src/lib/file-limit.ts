/**
 * The open-file limit the server runs with. Every client connection, every connection to a listener and each
 * database file takes a descriptor, and Bun's server cannot cap connections: at the limit it spins accepting
 * (a core at 100 %, nothing served). Bun raises its soft limit to the hard one at start, so what is read here is
 * what the process really has.
 */
import { readFileSync } from "node:fs";
import type { Logger } from "./log.ts";

export const MIN_FILE_LIMIT = 4096;

/** The soft limit from `/proc/self/limits`; null where it cannot be read (not Linux). */
export function openFileLimit(limits = readProcLimits()): number | null {
  const row = limits?.split("\n").find((line) => line.startsWith("Max open files"));
  const soft = row?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === undefined) return null;
  return soft === "unlimited" ? Infinity : Number(soft) || null;
}

function readProcLimits(): string | null {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return null; // no procfs (macOS, Windows): no warning rather than a guess
  }
}

/** One warning at start when the limit is below MIN_FILE_LIMIT. */
export function warnOnLowFileLimit(log: Logger, limit = openFileLimit()): void {
  if (limit === null || limit >= MIN_FILE_LIMIT) return;
  log.warn(`open-file limit below ${MIN_FILE_LIMIT}: at the limit the server spins accepting connections; raise it (LimitNOFILE=65536 under systemd, ulimit -n 65536 in a shell)`, { limit });
}
