/**
 * What every section of the bench shares: the plan, a temporary directory (removed on exit), the message body,
 * the receivers process, and the lists the report is made from.
 */
import type { Plan } from "./options.ts";
import type { Receivers } from "./receiver-client.ts";
import type { CpuRow, Figure } from "./report.ts";
import { cpuMeter, type CpuReport } from "./proc-stats.ts";

export type Ctx = {
  plan: Plan;
  dir: string;
  body: string;
  bodyFile: string;
  receivers: Receivers;
  figures: Figure[];
  cpu: CpuRow[];
  details: Record<string, unknown>;
  peaks: { fanoutKb: number; baselineKb: number; fanoutBy: Record<string, number> };
};

/** Keeps the peak RSS of every fanout process by run, so the report can say which run set the peak. */
export function notePeak(ctx: Ctx, run: string, kb: number): void {
  ctx.peaks.fanoutKb = Math.max(ctx.peaks.fanoutKb, kb);
  ctx.peaks.fanoutBy[run] = kb;
}

export const log = (line: string) => console.error(`bench: ${line}`);

function cpuText(r: CpuReport | undefined): string {
  if (!r) return "—";
  const top = (r.threads ?? []).slice(0, 3).map((t) => `${t.name} ${t.percent}`).join(", ");
  return top ? `${r.percent} (${top})` : String(r.percent);
}

/** Starts CPU meters on the server (per thread), the receivers and, given `database`, the database server's
 * processes; the returned function ends them and adds a row to the CPU table, the evidence for where time goes.
 * The client's CPU comes from its own rusage. */
export function meterCpu(ctx: Ctx, run: string, serverPid: number | undefined, database?: () => () => number) {
  const server = cpuMeter(serverPid, true);
  const receivers = cpuMeter(ctx.receivers.child.proc.pid);
  const db = database?.();
  return (clientCpu?: number) => {
    const s = server();
    const r = receivers();
    const serverText = db ? `${cpuText(s)} + PostgreSQL ${db()}` : cpuText(s);
    ctx.cpu.push({ run, server: serverText, client: clientCpu === undefined ? "—" : String(clientCpu), receivers: cpuText(r) });
    return { server: s, receivers: r, client: clientCpu };
  };
}
