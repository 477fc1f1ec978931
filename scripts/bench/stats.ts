/** Small statistics helpers; percentiles by nearest rank, so a reported p99 is a latency that was observed. */

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: number[]): number | null {
  return percentile(values, 50);
}

export const ratio = (value: number | null | undefined, base: number | null | undefined): number | null =>
  value != null && base != null && base > 0 ? value / base : null;
