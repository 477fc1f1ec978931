/**
 * Reads /metrics the way a scraper does: the text is parsed by parse-prometheus-text-format (a port of the
 * Prometheus Python client's parser), which refuses malformed lines. Its grouping of histograms collapses
 * series that differ in labels into one, so histogram families are handed to it untyped (their `# TYPE` line
 * dropped): every `_bucket`, `_sum` and `_count` sample then comes back with all its labels, and `histogram()`
 * assembles them here.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { waitFor, type Fanout, type Proto } from "./harness.ts";

type Sample = { value: string; labels?: Record<string, string> };
type Family = { name: string; help: string; type: string; metrics: Sample[] };
export type Labels = Record<string, string>;

const matches = (sample: Sample, labels: Labels) => Object.entries(labels).every(([k, v]) => sample.labels?.[k] === v);

export class Metrics {
  readonly families = new Map<string, Family>();
  readonly types = new Map<string, string>();

  constructor(readonly text: string) {
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) this.types.set(m[1]!, m[2]!);
    const untyped = text.replace(/^# TYPE \S+ histogram\n/gm, "");
    for (const f of parsePrometheusTextFormat(untyped) as Family[]) this.families.set(f.name, f);
  }

  samples(name: string, labels: Labels = {}): Sample[] {
    return (this.families.get(name)?.metrics ?? []).filter((s) => matches(s, labels));
  }

  /** The one sample of `name` with these labels (and any others); undefined when there is none. */
  value(name: string, labels: Labels = {}): number | undefined {
    const found = this.samples(name, labels);
    if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} names ${found.length} series`);
    return found[0] === undefined ? undefined : Number(found[0].value);
  }

  /** The sum over every series of `name` with these labels (0 when there is none). */
  sum(name: string, labels: Labels = {}): number {
    return this.samples(name, labels).reduce((n, s) => n + Number(s.value), 0);
  }

  histogram(name: string, labels: Labels = {}): { buckets: Map<string, number>; sum: number; count: number } | undefined {
    const count = this.value(`${name}_count`, labels);
    if (count === undefined) return undefined;
    const buckets = new Map(this.samples(`${name}_bucket`, labels).map((s) => [s.labels!.le!, Number(s.value)]));
    return { buckets, sum: this.value(`${name}_sum`, labels)!, count };
  }
}

export async function scrape(fanout: Fanout, proto: Proto = "h1", headers: Record<string, string> = {}): Promise<Metrics> {
  const reply = await fanout.call(proto, "GET", "/metrics", { key: null, headers });
  if (reply.status !== 200) throw new Error(`GET /metrics: ${reply.status} ${reply.text}`);
  if (!reply.headers.get("content-type")?.startsWith("text/plain; version=0.0.4")) throw new Error(`content-type ${reply.headers.get("content-type")}`);
  return new Metrics(reply.text);
}

/** Scrapes until `check` holds, and returns that scrape. */
export async function scrapeUntil(fanout: Fanout, check: (m: Metrics) => boolean, what: string, ms = 10_000, headers?: Record<string, string>): Promise<Metrics> {
  let last: Metrics | undefined;
  return waitFor(async () => {
    last = await scrape(fanout, "h1", headers);
    return check(last) && last;
  }, ms, () => `${what}; last scrape:\n${last?.text.split("\n").filter((l) => l.startsWith("fanout_")).join("\n")}`);
}
