// Configuration: one TypeBox schema describes every setting, and each setting's `cli` option names its flag, its
// variable, its default (written as a user would write it) and the parser from text. loadConfig is pure: main.ts
// passes process.env and process.argv, so tests need neither. Precedence: flag, then variable, then default.
// An empty variable counts as unset (compose files often write `FANOUT_BASE_URL=`). help, version and completion
// short-circuit before any setting is read, so `fanout version` works beside a broken environment.
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import ipaddr from "ipaddr.js";
import { durationToMs, MAX_TIMER_MS } from "./lib/durations";
import { isPostgresUrl, parsePostgresUrl } from "./store/postgres/url.ts";

export type Command =
  | { name: "serve" } | { name: "migrate" } | { name: "version" } | { name: "help" }
  | { name: "orgs-create"; orgName: string } | { name: "orgs-list" } | { name: "backup"; file: string } | { name: "compact" }
  | { name: "completion"; shell: Shell };

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];
export const SHELL_LIST = `${SHELLS.slice(0, -1).join(", ")} or ${SHELLS.at(-1)}`;

/** A configuration mistake; main.ts prints the message as one line on stderr and exits 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** A setting's command-line face. Defaults are written as a user would write them and parsed like user input. */
export interface Cli {
  flag: string;
  env: string;
  arg?: string; // help placeholder; absent for flags that take no value
  bare?: string; // the value of the flag written without `=value`; such a flag never takes the next word
  noValue?: boolean; // refuses `=value`: `--no-tls=off` would read as a double negative
  default?: string; // absent for settings that stay unset
  unset?: string; // help text shown instead of a default
  about: string; // help text
  expect: string; // completes "expected …" in error lines
  secret?: boolean; // never echoed back in an error
  show?: (text: string) => string; // how an error line shows the text given, instead of quoting it
  parse: (text: string) => unknown; // malformed text yields something the schema rejects (NaN, undefined)
}

const ORG_NAME = /^(?=.{1,253}$)[a-z0-9][a-z0-9-]*(?:\.[a-z0-9][a-z0-9-]*)+$/;
const BOOLEANS: Record<string, boolean> = { on: true, true: true, "1": true, off: false, false: false, "0": false };

const asText = (text: string) => text;
/** Digits only, so "1e3", "0x10" and " 80" are refused; beyond 2^53 a number no longer means what was written. */
function toInteger(text: string): number {
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  return Number.isSafeInteger(value) ? value : Number.NaN;
}
const toMs = (text: string) => durationToMs(text) ?? Number.NaN;
const toMsOrZero = (text: string) => (text.trim() === "0" ? 0 : toMs(text));
const toBoolean = (text: string) => BOOLEANS[text.trim().toLowerCase()];
const toMsList = (text: string) => text.split(",").map((part) => durationToMs(part));

/** Why a PostgreSQL URL cannot be used, or undefined when it can (or the text is a file path). */
function postgresUrlProblem(text: string): string | undefined {
  if (!isPostgresUrl(text)) return undefined;
  try {
    parsePostgresUrl(text);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
const toDb = (text: string) => (postgresUrlProblem(text) === undefined ? text : undefined);
// A URL carries a password: an error line says what is wrong with it, never the URL itself.
const showDb = (text: string) => (isPostgresUrl(text) ? `got a PostgreSQL URL: ${postgresUrlProblem(text)}` : `got '${text}'`);

function toLockout(text: string): { attempts: number; windowMs: number; lockMs: number } | undefined {
  const match = /^(\d+)\/([^:]+):(.+)$/.exec(text.trim());
  if (!match) return undefined;
  return { attempts: toInteger(match[1]!), windowMs: toMs(match[2]!), lockMs: toMs(match[3]!) };
}

/** A CIDR in canonical form; a bare address covers just itself. Only dotted-quad IPv4 is accepted, because
 * ipaddr.js would also read `127.1` or `0x7f000001`, which nobody means in an allow list. */
function toCidr(text: string): string | undefined {
  const [address = "", bits, extra] = text.trim().split("/");
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (extra !== undefined || address.includes("%") || !(v4 || ipaddr.IPv6.isValid(address))) return undefined;
  const max = v4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
  return prefix <= max ? `${ipaddr.parse(address).toString()}/${prefix}` : undefined;
}

function toCidrList(text: string): string[] | undefined {
  if (text.trim() === "") return [];
  const cidrs = text.split(",").map(toCidr);
  return cidrs.every((cidr) => cidr !== undefined) ? (cidrs as string[]) : undefined;
}

function toOrigin(text: string): string | undefined {
  if (!URL.canParse(text)) return undefined;
  const url = new URL(text);
  const web = url.protocol === "http:" || url.protocol === "https:";
  const bare = url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
  return web && bare && !/[?#]/.test(text) ? url.origin : undefined;
}

/** The fixed shares of the pool (store/postgres/pool.ts) plus one for the API thread's queries. */
export const DB_POOL_MIN = 5;

const timer = (min: number) => ({ minimum: min, maximum: MAX_TIMER_MS });
const DURATION = `a duration such as 250ms, 5s, 2m or 1h (a whole number, at most ${Math.floor(MAX_TIMER_MS / 3_600_000)}h)`;
const RETENTION = "a duration such as 30d, 12h or 90m, or 0 to keep everything";
const POSITIVE = "a positive integer";

/** Attaches a setting's command-line face to its schema, so the schema stays the one description of the setting. */
function setting<T extends TSchema>(schema: T, parse: Cli["parse"], expect: string, cli: Omit<Cli, "parse" | "expect">): T {
  return Object.assign(schema, { cli: { ...cli, parse, expect } });
}

export const ConfigSchema = Type.Object({
  /** Listen address (IP or host name). 0.0.0.0 serves every interface, the usual need inside a container. */
  host: setting(Type.String({ pattern: "^\\S+$" }), asText, "an address or host name",
    { flag: "--host", env: "FANOUT_HOST", arg: "<address>", default: "0.0.0.0", about: "listen address" }),
  /** TCP port. 0 lets the kernel pick a free port, so parallel tests and CI never collide. */
  port: setting(Type.Integer({ minimum: 0, maximum: 65535 }), toInteger, "an integer from 0 to 65535",
    { flag: "--port", env: "FANOUT_PORT", arg: "<n>", default: "8443", about: "listen port; 0 picks a free port" }),
  /**
   * SQLite file path; `:memory:` gives a throwaway instance for tests and CI; a postgres:// URL selects PostgreSQL,
   * which several instances may share.
   */
  db: setting(Type.String({ minLength: 1 }), toDb, "a file path, :memory: or postgres://user:password@host:port/database",
    { flag: "--db", env: "FANOUT_DB", arg: "<file|url>", default: "./fanout-data/fanout.db", show: showDb,
      about: "SQLite file; :memory: for a throwaway instance; postgres://user:password@host:port/database for PostgreSQL" }),
  /**
   * PostgreSQL connections one instance opens at most, over its API and delivery threads (each thread also holds
   * one for LISTEN beyond it). Bounds what many instances ask of one server's max_connections. Unused with SQLite.
   */
  dbPool: setting(Type.Integer({ minimum: DB_POOL_MIN, maximum: 1000 }), toInteger, `an integer from ${DB_POOL_MIN} to 1000`,
    { flag: "--db-pool", env: "FANOUT_DB_POOL", arg: "<n>", default: "10", about: "PostgreSQL connections per instance" }),
  /** Serve HTTPS. Off only behind a TLS-terminating proxy: API keys travel in a header. */
  tls: setting(Type.Boolean(), toBoolean, "on or off", { flag: "--no-tls", env: "FANOUT_TLS", bare: "off", noValue: true,
    default: "on", about: "--no-tls or FANOUT_TLS=off: plain HTTP/1.1 and h2c, behind a TLS-terminating proxy" }),
  /** PEM certificate file. Without cert and key a self-signed certificate for localhost is made beside the database. */
  tlsCert: Type.Optional(setting(Type.String({ minLength: 1 }), asText, "a file path",
    { flag: "--tls-cert", env: "FANOUT_TLS_CERT", arg: "<pem file>", unset: "self-signed", about: "PEM certificate" })),
  /** PEM private key file; given together with tlsCert or not at all. */
  tlsKey: Type.Optional(setting(Type.String({ minLength: 1 }), asText, "a file path",
    { flag: "--tls-key", env: "FANOUT_TLS_KEY", arg: "<pem file>", unset: "self-signed", about: "PEM private key" })),
  /** Origin used in `_links`, no trailing slash. Unset, links follow the request's Host, which a proxy may rewrite. */
  baseUrl: Type.Optional(setting(Type.String({ pattern: "^https?://[^/?#]+$" }), toOrigin,
    "an http(s) origin such as https://fanout.example.com",
    { flag: "--base-url", env: "FANOUT_BASE_URL", arg: "<origin>", unset: "from the request", about: "origin used in _links" })),
  /** Organization created on an empty database, so a fresh instance is usable at once. */
  bootstrapOrg: setting(Type.String({ pattern: ORG_NAME.source }), asText, "a lowercase reverse-DNS name such as com.example",
    { flag: "--bootstrap-org", env: "FANOUT_BOOTSTRAP_ORG", arg: "<name>", default: "local.fanout",
      about: "organization created on an empty database" }),
  /** Owner key of that organization, taken as given so CI can know it; unset, a random key is printed once. */
  bootstrapKey: Type.Optional(setting(Type.String({ pattern: "^[\\x21-\\x7e]{8,}$" }), asText,
    "8 or more printable ASCII characters without spaces",
    { flag: "--bootstrap-key", env: "FANOUT_BOOTSTRAP_KEY", arg: "<key>", unset: "random, printed once", secret: true,
      about: "owner key of the bootstrap organization" })),
  /** CIDRs that notify and liveness URLs may resolve into besides public addresses (exceptions to the SSRF guard). */
  allowTargets: setting(Type.Array(Type.String()), toCidrList, "a comma list of CIDRs such as 127.0.0.0/8,::1/128",
    { flag: "--allow-targets", env: "FANOUT_ALLOW_TARGETS", arg: "<cidr,...>", default: "", unset: "none",
      about: "CIDRs that listener URLs may resolve into besides public addresses" }),
  /** Milliseconds to wait before each retry after the first attempt; the list's length is the number of retries. */
  retryScheduleMs: setting(Type.Array(Type.Integer(timer(0)), { minItems: 1 }), toMsList, `a comma list of ${DURATION}`,
    { flag: "--retry-schedule", env: "FANOUT_RETRY_SCHEDULE", arg: "<duration,...>", default: "5s,5m,30m,2h,5h,10h,10h",
      about: "delays before each retry after the first attempt" }),
  /** Milliseconds one delivery request may take; a watchdog, since a stalled receiver would hold a slot forever. */
  deliveryTimeoutMs: setting(Type.Integer(timer(1)), toMs, DURATION, { flag: "--delivery-timeout",
    env: "FANOUT_DELIVERY_TIMEOUT", arg: "<duration>", default: "15s", about: "time limit of one delivery request" }),
  /** Milliseconds between liveness probes of one listener. */
  livenessIntervalMs: setting(Type.Integer(timer(1)), toMs, DURATION, { flag: "--liveness-interval",
    env: "FANOUT_LIVENESS_INTERVAL", arg: "<duration>", default: "30s", about: "time between liveness probes of one listener" }),
  /** Milliseconds a graceful stop may take before in-flight work is abandoned, so SIGTERM always ends the process. */
  shutdownTimeoutMs: setting(Type.Integer(timer(0)), toMs, DURATION, { flag: "--shutdown-timeout",
    env: "FANOUT_SHUTDOWN_TIMEOUT", arg: "<duration>", default: "10s", about: "bound on a graceful stop (SIGTERM, SIGINT)" }),
  /**
   * Milliseconds a final message (every delivery acknowledged or missed) is kept, with its deliveries and attempts,
   * so the database stops growing under a steady load; 0 keeps everything (docs/operations.md, Sizing).
   */
  retentionMs: setting(Type.Integer({ minimum: 0 }), toMsOrZero, RETENTION, { flag: "--retention", env: "FANOUT_RETENTION",
    arg: "<duration>", default: "30d", about: "how long final messages are kept; 0 keeps everything" }),
  /** Requests per minute per API key; 0 turns limiting off. Keeps one noisy client from monopolizing the writer. */
  rateLimit: setting(Type.Integer({ minimum: 0 }), toInteger, "a non-negative integer", { flag: "--rate-limit",
    env: "FANOUT_RATE_LIMIT", arg: "<n>", default: "60000", about: "requests per minute per API key; 0 turns limiting off" }),
  /** `attempts` failed authentications from one client address within `windowMs` lock it out for `lockMs` (key guessing). */
  lockout: setting(
    Type.Object({ attempts: Type.Integer({ minimum: 1 }), windowMs: Type.Integer(timer(1)), lockMs: Type.Integer(timer(1)) }),
    toLockout, "N/window:lock such as 10/1m:5m (N at least 1, durations above 0)",
    { flag: "--lockout", env: "FANOUT_LOCKOUT", arg: "<n/window:lock>", default: "10/1m:5m",
      about: "N failed authentications within a window lock a client address out for a time" }),
  /** Take the client address from X-Forwarded-For; only behind a proxy that sets it, else clients can forge it. */
  trustProxy: setting(Type.Boolean(), toBoolean, "on, off, true, false, 1 or 0", { flag: "--trust-proxy",
    env: "FANOUT_TRUST_PROXY", arg: "[=on|off]", bare: "on", default: "off", about: "take the client address from X-Forwarded-For" }),
  /** Largest accepted `data`, serialized, in bytes: bounds memory per request and database growth per message. */
  maxMessageBytes: setting(Type.Integer({ minimum: 1 }), toInteger, POSITIVE, { flag: "--max-message-bytes",
    env: "FANOUT_MAX_MESSAGE_BYTES", arg: "<bytes>", default: "262144", about: "largest accepted data, serialized" }),
  /** SQLite synchronous mode: `normal` survives a process crash; `full` also power loss, at the price of a sync per commit. */
  durability: setting(Type.Union([Type.Literal("normal"), Type.Literal("full")]), asText, "normal or full",
    { flag: "--durability", env: "FANOUT_DURABILITY", arg: "<normal|full>", default: "normal",
      about: "normal: a 200 survives a crash; full: also power loss" }),
  /** Delivery requests in flight in all; bounds the worker's sockets and memory. */
  deliveryConcurrency: setting(Type.Integer({ minimum: 1 }), toInteger, POSITIVE, { flag: "--delivery-concurrency",
    env: "FANOUT_DELIVERY_CONCURRENCY", arg: "<n>", default: "256", about: "delivery requests in flight, in all" }),
  /** Delivery requests in flight to one listener, so one slow listener cannot starve the rest. */
  listenerConcurrency: setting(Type.Integer({ minimum: 1 }), toInteger, POSITIVE, { flag: "--listener-concurrency",
    env: "FANOUT_LISTENER_CONCURRENCY", arg: "<n>", default: "16", about: "delivery requests in flight to one listener" }),
  /** Bearer token that GET /metrics requires from any address; unset, /metrics answers loopback clients only. */
  metricsToken: Type.Optional(setting(Type.String({ pattern: "^[\\x21-\\x7e]{16,}$" }), asText,
    "16 or more printable ASCII characters without spaces",
    { flag: "--metrics-token", env: "FANOUT_METRICS_TOKEN", arg: "<token>", unset: "none: loopback clients only", secret: true,
      about: "bearer token for GET /metrics" })),
  /** `text`: one readable line per event; `json`: one JSON object per line, for log collectors. */
  logFormat: setting(Type.Union([Type.Literal("text"), Type.Literal("json")]), asText, "text or json",
    { flag: "--log-format", env: "FANOUT_LOG_FORMAT", arg: "<text|json>", default: "text", about: "text or json lines" }),
});

export type Config = Static<typeof ConfigSchema>;

type Key = keyof Config;
type Env = Record<string, string | undefined>;
/** A setting's text and where it came from (a flag or a variable), for error lines. */
interface Raw { text: string; source: string }

const cliOf = (schema: TSchema) => schema["cli"] as Cli;
/** Every setting with its schema and command-line options, in the schema's order (help.ts, completion.ts). */
export const SETTINGS = Object.entries(ConfigSchema.properties)
  .map(([key, schema]) => ({ key: key as Key, schema: schema as TSchema, cli: cliOf(schema) }));
const BY_FLAG = new Map(SETTINGS.map((setting) => [setting.cli.flag, setting]));

/**
 * The settings as the start line logs them, by key: lists comma-joined, the lockout as `N/window:lock` in ms. A
 * secret appears only as "set", never its value or its length.
 */
export function loggableSettings(config: Config): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, cli } of SETTINGS) {
    const value = config[key] as unknown;
    if (value === undefined) continue;
    if (cli.secret) out[key] = "set";
    else if (Array.isArray(value)) out[key] = value.join(",");
    else if (key === "lockout") out[key] = `${config.lockout.attempts}/${config.lockout.windowMs}ms:${config.lockout.lockMs}ms`;
    else out[key] = value as string | number | boolean;
  }
  return out;
}

/** Milliseconds for `250ms`, `5s`, `2m`, `1h`; whole numbers only (see lib/durations.ts). */
export function parseDuration(text: string): number {
  const ms = durationToMs(text);
  if (ms === undefined) throw new ConfigError(`invalid duration '${text}': expected ${DURATION}`);
  return ms;
}

/** Lowercase reverse-DNS, two or more labels of a-z 0-9 -, each starting with a letter or digit (docs/api.md). */
export function isOrgName(name: string): boolean {
  return ORG_NAME.test(name);
}

/** `--help`/`-h` and `--version`/`-v` win wherever they stand before `--`; commands that read no setting get the
 * defaults as config. */
export function loadConfig(env: Env, argv: string[]): { command: Command; config: Config } {
  const defaults = () => readSettings({}, new Map());
  const options = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  if (options.includes("--help") || options.includes("-h")) return { command: { name: "help" }, config: defaults() };
  if (options.includes("--version") || options.includes("-v")) return { command: { name: "version" }, config: defaults() };
  const { words, flags } = readArgs(argv);
  const command = readCommand(words);
  if (["help", "version", "completion"].includes(command.name)) return { command, config: defaults() };
  return { command, config: readSettings(env, flags) };
}

function readArgs(argv: string[]): { words: string[]; flags: Map<Key, Raw> } {
  const words: string[] = [];
  const flags = new Map<Key, Raw>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-")) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const setting = BY_FLAG.get(name);
    if (!setting) throw new ConfigError(`unknown flag ${name} (see fanout help)`);
    let text = eq < 0 ? undefined : arg.slice(eq + 1);
    if (setting.cli.noValue && text !== undefined) throw new ConfigError(`invalid ${name}: it takes no value`);
    if (text === undefined && setting.cli.bare !== undefined) text = setting.cli.bare;
    if (text === undefined) {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new ConfigError(`missing value for ${name}: expected ${setting.cli.expect}`);
      }
      text = next;
      i++;
    }
    flags.set(setting.key, { text, source: name });
  }
  return { words, flags };
}

function readCommand(words: string[]): Command {
  const [first = "serve", ...rest] = words;
  switch (first) {
    case "serve": case "migrate": case "compact": case "version": case "help":
      return refuseExtra(first, rest, { name: first });
    case "backup":
      if (!rest[0]) throw new ConfigError("missing argument for backup: expected a file path (fanout backup <file>)");
      return refuseExtra("backup <file>", rest.slice(1), { name: "backup", file: rest[0] });
    case "orgs":
      return readOrgsCommand(rest);
    case "completion":
      return readCompletionCommand(rest);
    default:
      throw new ConfigError(`unknown command '${first}' (see fanout help)`);
  }
}

function readOrgsCommand([sub, ...rest]: string[]): Command {
  if (sub === "list") return refuseExtra("orgs list", rest, { name: "orgs-list" });
  if (sub !== "create") {
    const problem = sub === undefined ? "missing subcommand" : `unknown subcommand '${sub}'`;
    throw new ConfigError(`${problem} for orgs: expected create or list`);
  }
  const orgName = rest[0];
  const expected = "expected a lowercase reverse-DNS name such as com.example";
  if (orgName === undefined) throw new ConfigError(`missing argument for orgs create: ${expected}`);
  if (!isOrgName(orgName)) throw new ConfigError(`invalid organization name '${orgName}': ${expected}`);
  return refuseExtra("orgs create <name>", rest.slice(1), { name: "orgs-create", orgName });
}

function readCompletionCommand([shell, ...rest]: string[]): Command {
  const expected = `expected ${SHELL_LIST} (fanout completion <shell>)`;
  if (shell === undefined) throw new ConfigError(`missing shell for completion: ${expected}`);
  if (!SHELLS.includes(shell as Shell)) throw new ConfigError(`unknown shell '${shell}' for completion: ${expected}`);
  return refuseExtra("completion <shell>", rest, { name: "completion", shell: shell as Shell });
}

function refuseExtra(usage: string, extra: string[], command: Command): Command {
  if (extra.length > 0) throw new ConfigError(`unexpected argument '${extra[0]}' after ${usage}`);
  return command;
}

function readSettings(env: Env, flags: Map<Key, Raw>): Config {
  const config: Record<string, unknown> = {};
  const sources = new Map<Key, string>();
  for (const { key, schema, cli } of SETTINGS) {
    const envText = env[cli.env];
    const raw = flags.get(key)
      ?? (envText ? { text: envText, source: cli.env } : undefined)
      ?? (cli.default === undefined ? undefined : { text: cli.default, source: `default of ${cli.flag}` });
    if (raw === undefined) continue;
    const value = cli.parse(raw.text);
    if (!Value.Check(schema, value)) {
      const got = cli.secret ? `got ${raw.text.length} characters` : cli.show ? cli.show(raw.text) : `got '${raw.text}'`;
      throw new ConfigError(`invalid ${raw.source}: expected ${cli.expect}, ${got}`);
    }
    config[key] = value;
    sources.set(key, raw.source);
  }
  requirePair(sources, "tlsCert", "tlsKey");
  return config as Config;
}

/** A certificate without its key (or the reverse) is a half-done setup, never a reason to fall back to self-signed. */
function requirePair(sources: Map<Key, string>, a: Key, b: Key): void {
  const [given, missing] = sources.has(a) ? [a, b] : [b, a];
  if (!sources.has(given) || sources.has(missing)) return;
  const wanted = cliOf(ConfigSchema.properties[missing]);
  throw new ConfigError(`${sources.get(given)} needs ${wanted.flag} (${wanted.env}) too: give both PEM files or neither`);
}
