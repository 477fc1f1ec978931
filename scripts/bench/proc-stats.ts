/**
 * Memory and CPU of processes from Linux /proc. CPU is read as utime+stime ticks (USER_HZ is 100 on every Linux
 * ABI) before and after a run and reported as percent of one core, so a figure of 200 % means both cores of the
 * 2-core machine were busy in that process. Per-thread figures tell the API thread from the delivery worker.
 */
import { readdirSync, readFileSync } from "node:fs";

const USER_HZ = 100;

function statFields(path: string): string[] | undefined {
  try {
    const stat = readFileSync(path, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" "); // comm may hold spaces and parentheses
  } catch {
    return undefined; // the process or thread has ended
  }
}

/** utime + stime in seconds; fields 14 and 15 of stat, 12 and 13 after the comm field. */
export function cpuSeconds(pid: number, tid?: number): number {
  const { user, system } = cpuSplit(pid, tid);
  return user + system;
}

/** utime and stime apart, in seconds: system time is the kernel's work for the thread (sockets, files). */
export function cpuSplit(pid: number, tid?: number): { user: number; system: number } {
  const fields = statFields(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`);
  return fields ? { user: Number(fields[11]) / USER_HZ, system: Number(fields[12]) / USER_HZ } : { user: 0, system: 0 };
}

export function memoryKb(pid: number): { rssKb: number; hwmKb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const value = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    return { rssKb: value("VmRSS"), hwmKb: value("VmHWM") };
  } catch {
    return undefined;
  }
}

type ThreadTicks = Map<number, { name: string; seconds: number; system: number }>;

export function threadTicks(pid: number): ThreadTicks {
  const out: ThreadTicks = new Map();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // process gone
  }
  for (const tid of tids) {
    let name = "?";
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    } catch {
      continue; // thread ended while listing
    }
    const { user, system } = cpuSplit(pid, Number(tid));
    out.set(Number(tid), { name, seconds: user + system, system });
  }
  return out;
}

export type CpuReport = { percent: number; threads?: { name: string; percent: number }[] };

/** Starts a CPU measurement of `pid`; the returned function ends it. Threads that used under 2 % are left out. */
export function cpuMeter(pid: number | undefined, perThread = false): () => CpuReport | undefined {
  if (pid === undefined) return () => undefined;
  const t0 = performance.now();
  const c0 = cpuSeconds(pid);
  const th0 = perThread ? threadTicks(pid) : new Map();
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const percent = round1(((cpuSeconds(pid) - c0) / wall) * 100);
    if (!perThread) return { percent };
    const threads: { name: string; percent: number }[] = [];
    for (const [tid, now] of threadTicks(pid)) {
      const before = th0.get(tid)?.seconds ?? 0;
      const p = round1(((now.seconds - before) / wall) * 100);
      if (p >= 2) threads.push({ name: `${now.name}#${tid}`, percent: p });
    }
    threads.sort((a, b) => b.percent - a.percent);
    return { percent, threads };
  };
}

export type ThreadCpu = {
  mainSeconds: number; // the API thread: the main thread, tid == pid
  mainSystemSeconds: number; // of which in the kernel
  workerSeconds: number; // the delivery worker
  workerSystemSeconds: number;
  otherWorkerSeconds: number; // the other threads named Worker (the checkpoint thread)
  totalSeconds: number; // the whole process
  workerTid: number | undefined;
};

/**
 * CPU per thread of fanout over a workload. The delivery worker and the checkpoint thread are both Bun Workers,
 * named "Worker" alike, and which starts first is the code's choice, not a contract: over a workload of
 * deliveries the delivery worker is the one that used the most CPU (it sends every delivery; the checkpoint thread
 * copies pages and answers scrapes, a small fraction of that), so the busiest "Worker" is taken as it.
 */
export function threadCpuMeter(pid: number): () => ThreadCpu {
  const before = threadTicks(pid);
  const total0 = cpuSeconds(pid);
  return () => {
    const used = [...threadTicks(pid)].map(([tid, t]) => ({ tid, name: t.name, seconds: t.seconds - (before.get(tid)?.seconds ?? 0),
      system: t.system - (before.get(tid)?.system ?? 0) }));
    const workers = used.filter((t) => t.name === "Worker").sort((a, b) => b.seconds - a.seconds);
    const main = used.find((t) => t.tid === pid);
    return {
      mainSeconds: main?.seconds ?? 0,
      mainSystemSeconds: main?.system ?? 0,
      workerSeconds: workers[0]?.seconds ?? 0,
      workerSystemSeconds: workers[0]?.system ?? 0,
      otherWorkerSeconds: workers.slice(1).reduce((n, t) => n + t.seconds, 0),
      totalSeconds: cpuSeconds(pid) - total0,
      workerTid: workers[0]?.tid,
    };
  };
}

/** Samples VmRSS/VmHWM while a process lives; VmHWM is the kernel's own peak, the samples guard a late read. */
export class MemorySampler {
  peakKb = 0;
  lastRssKb = 0;
  private timer: ReturnType<typeof setInterval>;
  constructor(private pid: number, everyMs = 100) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }
  sample(): void {
    const m = memoryKb(this.pid);
    if (!m) return;
    this.lastRssKb = m.rssKb;
    this.peakKb = Math.max(this.peakKb, m.hwmKb, m.rssKb);
  }
  stop(): number {
    this.sample();
    clearInterval(this.timer);
    return this.peakKb;
  }
}

export const round1 = (x: number) => Math.round(x * 10) / 10;
