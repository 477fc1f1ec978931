/**
 * Figures and their presentation. Every figure carries its same-run baseline and the ratio; a target is either
 * a ratio to reach (throughput) or an absolute bound (latency, memory). The printed table and the JSON file are
 * made from the same list, so they cannot disagree.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ratio } from "./stats.ts";

export type Unit = "msg/s" | "deliveries/s" | "ms" | "µs" | "MB" | "s" | "%";
export type Target = { kind: "ratio>="; value: number } | { kind: "<" | "<="; value: number };

export type Figure = {
  section: string;
  name: string;
  unit: Unit;
  value: number | null; // null: not measured (e.g. "not delivered")
  baseline: number | null;
  baselineName: string;
  ratio: number | null;
  target?: Target;
  pass?: boolean | null;
  note?: string;
};

export type CpuRow = { run: string; server: string; client: string; receivers: string };

export function figure(f: Omit<Figure, "ratio" | "pass">): Figure {
  const r = ratio(f.value, f.baseline);
  let pass: boolean | null | undefined;
  if (f.target?.kind === "ratio>=") pass = r === null ? null : r >= f.target.value;
  if (f.target?.kind === "<") pass = f.value === null ? null : f.value < f.target.value;
  if (f.target?.kind === "<=") pass = f.value === null ? null : f.value <= f.target.value;
  return { ...f, ratio: r, pass };
}

function num(x: number | null, unit: Unit): string {
  if (x === null || !Number.isFinite(x)) return "—";
  if (unit === "ms") return `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`;
  if (unit === "µs") return `${x < 100 ? x.toFixed(1) : x.toFixed(0)} µs`;
  if (unit === "MB") return `${x.toFixed(1)} MB`;
  if (unit === "%") return `${x.toFixed(0)} %`;
  if (unit === "s") return `${x < 1 ? (x * 1000).toFixed(0) + " ms" : x.toFixed(2) + " s"}`;
  return `${Math.round(x).toLocaleString("en-US")}/s`;
}

function targetText(t?: Target): string {
  if (!t) return "";
  return t.kind === "ratio>=" ? `ratio ≥ ${t.value}` : `${t.kind === "<=" ? "≤" : "<"} ${t.value}`;
}

function passText(f: Figure): string {
  if (f.pass === undefined) return "";
  if (f.pass === null) return f.note?.startsWith("not delivered") ? "NOT DELIVERED" : "n/a";
  return f.pass ? "pass" : "FAIL";
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => [...(r[c] ?? "")].length)));
  const line = (r: string[]) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ").trimEnd();
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

export function renderFigures(figures: Figure[]): string {
  const rows = [["figure", "fanout", "baseline", "ratio", "target", "result", "baseline is"]];
  for (const f of figures) {
    rows.push([f.name, num(f.value, f.unit), num(f.baseline, f.unit), f.ratio === null ? "—" : f.ratio.toFixed(2),
      targetText(f.target), passText(f), f.baselineName]);
  }
  const notes = figures.filter((f) => f.note).map((f) => `  ${f.name}: ${f.note}`);
  return table(rows) + (notes.length ? `\nnotes:\n${notes.join("\n")}` : "");
}

export function renderCpu(rows: CpuRow[]): string {
  return table([["CPU, % of one core (2 cores = 200 %)", "server (top threads)", "client/sender", "receivers"],
    ...rows.map((r) => [r.run, r.server, r.client, r.receivers])]);
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(data, null, 2) + "\n");
}

export const mb = (kb: number | null | undefined) => (kb == null ? null : kb / 1024);
