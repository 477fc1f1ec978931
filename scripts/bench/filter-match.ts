/**
 * What matching a listener filter costs per message, beside what parsing the message costs in the same run
 * (the machine may be shared: time is the process's CPU time, and the ratio means more than the figure).
 * Not part of `npm run bench`:
 *   bun scripts/bench/filter-match.ts [rounds]
 * Each figure is the median of `rounds` rounds of ITERATIONS operations; the ratio, the median of each round's.
 */
import { compileFilter, filterSubject, matches, type CompiledFilter, type FilterSubject } from "../../src/lib/filter.ts";
import { messageBody } from "./payload.ts";

const ITERATIONS = 200_000;
const rounds = Number(process.argv[2] ?? 7);

const message = JSON.parse(messageBody()) as { name: string; data: unknown };
const dataText = JSON.stringify(message.data);

function compiled(filter: unknown): CompiledFilter {
  const result = compileFilter(filter);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.filter;
}

const filters = {
  // The example of the API docs; this payload has no `total`, so it fails on its last condition.
  typical: compiled({ names: ["order.*"], data: { "customer.tier": "gold", total: { $gte: 100 } } }),
  typicalMatching: compiled({ names: ["order.*"], data: { "customer.tier": "gold", "totals.gross": { $gte: 100 } } }),
  wider: compiled({
    names: ["invoice.*", "*.created"],
    data: { $or: [{ "items.0.sku": { $prefix: "SKU-" } }, { flags: { $contains: "gift" } }], "shipping.country": { $in: ["GB", "IE", "FR"] } },
  }),
};

let sink = 0;

const subject: FilterSubject = filterSubject(message.name, dataText);
for (const [name, filter] of Object.entries(filters)) if (!matches(filter, subject) && name !== "typical") throw new Error(`${name} should match`);

const ops: [string, () => unknown][] = [
  [`JSON.parse of the message's data (${dataText.length} bytes)`, () => JSON.parse(dataText)],
  ["filterSubject (the same parse, once per message)", () => filterSubject(message.name, dataText)],
  ...Object.entries(filters).map(([name, filter]): [string, () => unknown] => [`matches: ${name}`, () => matches(filter, subject)]),
];

/** CPU nanoseconds of this process: unlike the wall clock, it does not count the time other processes ran. */
function cpuNanoseconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) * 1000;
}

/** Nanoseconds per call of `op` over one round. */
function time(op: () => unknown): number {
  const started = cpuNanoseconds();
  for (let i = 0; i < ITERATIONS; i++) if (op()) sink++;
  return (cpuNanoseconds() - started) / ITERATIONS;
}

// The operations take turns within each round, so a burst of load from elsewhere falls on all of them.
const samples = ops.map((): number[] => []);
for (let round = 0; round < rounds; round++) ops.forEach(([, op], i) => samples[i]!.push(time(op)));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ratios = samples.map((row) => median(row.map((ns, round) => ns / samples[0]![round]!)));
ops.forEach(([label], i) => console.log(`${label.padEnd(52)} ${median(samples[i]!).toFixed(1).padStart(8)} ns   ${ratios[i]!.toFixed(3)} × parse`));
if (sink < 0) console.log(sink);
