/**
 * Command line and the two sizes of run. The full run is sized to finish within about seventeen minutes on the
 * 2-core reference machine (the throughput section six to eight of them, twice that with --compare); --quick is a
 * smoke check of under three minutes, so its figures are noisy and only show that every part works end to end.
 */
import { join } from "node:path";

export type Section = "startup" | "throughput" | "ingest" | "fanout" | "filters" | "pace" | "backlog" | "recovery" | "hostile" | "metrics" | "postgres";
export const SECTIONS: Section[] = ["startup", "throughput", "ingest", "fanout", "filters", "pace", "backlog", "recovery", "hostile", "metrics", "postgres"];

export type Plan = {
  quick: boolean;
  sections: Section[];
  out: string;
  binary: string;
  compare?: string; // --compare: a second binary the throughput section measures in alternated rounds
  deadlineMs: number;
  startups: number; // starts whose time to /healthz gives the median
  ingestRounds: number; // rounds per protocol, each baseline and fanout back to back; the median round is reported
  pairRounds: number; // rounds measured back to back: empty and backlog database (backlog)
  pairSeconds: number; // measured part of each run of a round
  warmupSeconds: number; // before each measured ingest run (JIT, TLS sessions, SQLite page cache)
  wrkConnections: number;
  h2Clients: number; // h2load connections...
  h2Streams: number; // ...and concurrent streams on each
  fanout: { listeners: number; messages: number }[];
  latencySeconds: number; // paced publishing for the publish-to-received delay
  stallMs: number; // no new delivery for this long ends a wait: "not delivered" or partial
  backlogDeliveries: number; // held deliveries already in the database
  drainDeliveries: number; // pending deliveries to a live receiver, timed from start to the last one
  globalConcurrency: number; // fanout's default caps, which the bare-fetch baseline copies
  listenerConcurrency: number;
  postgresRounds: number; // rounds of each PostgreSQL comparison (ingest per protocol, one instance against two)
  postgresFanout: { listeners: number; messages: number };
  throughput: Throughput;
};

/** The throughput section's sizes; its time is added to the deadline (twice with --compare). */
export type Throughput = {
  rounds: number; // rounds of the ingest and end-to-end runs (each binary once per round, the order alternating)
  ingestSeconds: number; // measured part of each ingest run, after warmupSeconds
  endToEndMessages: number; // publishes of the end-to-end runs, to 1 and to 10 listeners
  stepSeconds: number; // publishing of each step of the sustained-rate search
  steps: number; // steps of that search, per listener count
  budgetMs: number; // what the section takes per binary, for the deadline
};

export const ROOT = join(import.meta.dir, "..", "..");

const FULL = {
  deadlineMs: 20 * 60_000,
  startups: 5,
  // Five, not three: single rounds spread by ±10 % on a shared machine, and a median of three still moved with
  // one noisy round.
  ingestRounds: 5,
  pairRounds: 3,
  pairSeconds: 5,
  warmupSeconds: 2,
  fanout: [{ listeners: 1, messages: 60_000 }, { listeners: 10, messages: 10_000 }, { listeners: 100, messages: 1_000 }],
  latencySeconds: 8,
  stallMs: 10_000,
  backlogDeliveries: 1_000_000,
  drainDeliveries: 50_000,
  postgresRounds: 3,
  postgresFanout: { listeners: 10, messages: 10_000 },
  throughput: { rounds: 3, ingestSeconds: 8, endToEndMessages: 50_000, stepSeconds: 30, steps: 4, budgetMs: 10 * 60_000 },
};

const QUICK: typeof FULL = {
  deadlineMs: 110_000,
  startups: 2,
  ingestRounds: 1,
  pairRounds: 1,
  pairSeconds: 2,
  warmupSeconds: 0.5,
  fanout: [{ listeners: 1, messages: 10_000 }, { listeners: 10, messages: 2_000 }, { listeners: 100, messages: 200 }],
  latencySeconds: 2,
  stallMs: 3_000,
  backlogDeliveries: 100_000,
  drainDeliveries: 5_000,
  postgresRounds: 1,
  postgresFanout: { listeners: 10, messages: 2_000 },
  throughput: { rounds: 1, ingestSeconds: 2, endToEndMessages: 5_000, stepSeconds: 3, steps: 2, budgetMs: 90_000 },
};

const USAGE = `usage: bun scripts/bench.ts [--quick] [--only ${SECTIONS.join(",")}] [--out file] [--binary path] [--compare path]`;

export function parsePlan(argv: string[]): Plan {
  let quick = false;
  let sections = SECTIONS;
  let out = join(ROOT, ".bench", "results.json");
  let binary = join(ROOT, "dist", "fanout");
  let compare: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i] ?? fail(`${flag} needs a value`);
    if (flag === "--quick") quick = true;
    else if (flag === "--only") sections = value().split(",").map((s) => (SECTIONS.includes(s as Section) ? (s as Section) : fail(`unknown section ${s}`)));
    else if (flag === "--out") out = value();
    else if (flag === "--binary") binary = value();
    else if (flag === "--compare") compare = value();
    else if (flag === "--help" || flag === "-h") fail("");
    else fail(`unknown argument ${flag}`);
  }
  const sizes = quick ? QUICK : FULL;
  const binaries = compare ? 2 : 1;
  const deadlineMs = sizes.deadlineMs + (sections.includes("throughput") ? sizes.throughput.budgetMs * binaries : 0);
  return { quick, sections, out, binary, compare, wrkConnections: 64, h2Clients: 4, h2Streams: 32, globalConcurrency: 256,
    listenerConcurrency: 16, ...sizes, deadlineMs };
}

function fail(message: string): never {
  if (message) console.error(`bench: ${message}`);
  console.error(USAGE);
  process.exit(2);
}
