/** How times and numbers read in the dashboard. */

const number = new Intl.NumberFormat();
export const count = (n: number) => number.format(n);

export function dateTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** The time of day for a time today ("14:02:31"), else the date too. */
export function clock(ms: number, now = Date.now()): string {
  if (new Date(ms).toDateString() !== new Date(now).toDateString()) return dateTime(ms);
  return new Date(ms).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** "12 s ago", "in 4 min", "3 h ago": coarse on purpose, with dateTime() in a tooltip for the exact time. */
export function relative(ms: number, now = Date.now()): string {
  const seconds = Math.round((ms - now) / 1000);
  const abs = Math.abs(seconds);
  const [value, unit] = abs < 60 ? [abs, "s"] : abs < 3600 ? [Math.round(abs / 60), "min"] : abs < 86400 ? [Math.round(abs / 3600), "h"] : [Math.round(abs / 86400), "d"];
  if (abs < 2) return "just now";
  return seconds < 0 ? `${value} ${unit} ago` : `in ${value} ${unit}`;
}

/** A datetime-local input's value for a time (local, to the minute). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

export const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;
