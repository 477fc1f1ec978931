import { describe, expect, test } from "bun:test";
import { ConfigError, isOrgName, loadConfig, parseDuration, type Config } from "./config";
import { HELP_TEXT } from "./help";

const config = (argv: string[] = [], env: Record<string, string | undefined> = {}) => loadConfig(env, argv).config;
const command = (argv: string[], env: Record<string, string | undefined> = {}) => loadConfig(env, argv).command;

/** The ConfigError message loadConfig throws; fails the test when nothing is thrown. */
function errorOf(argv: string[], env: Record<string, string | undefined> = {}): string {
  try {
    loadConfig(env, argv);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify({ argv, env })}`);
}

describe("retention", () => {
  test("takes days, any other duration, and 0 for keeping everything", () => {
    expect(config([], { FANOUT_RETENTION: "7d" }).retentionMs).toBe(7 * 86_400_000);
    expect(config(["--retention", "90m"]).retentionMs).toBe(5_400_000);
    expect(config(["--retention=0"]).retentionMs).toBe(0);
    expect(errorOf(["--retention", "1.5d"])).toContain("--retention");
    expect(errorOf([], { FANOUT_RETENTION: "-1d" })).toContain("0 to keep everything");
  });
});

describe("defaults", () => {
  test("no arguments and no variables give serve with the documented defaults", () => {
    const expected: Config = {
      host: "0.0.0.0",
      port: 8443,
      db: "./fanout-data/fanout.db",
      dbPool: 10,
      tls: true,
      bootstrapOrg: "local.fanout",
      allowTargets: [],
      retryScheduleMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      deliveryTimeoutMs: 15_000,
      livenessIntervalMs: 30_000,
      shutdownTimeoutMs: 10_000,
      retentionMs: 30 * 86_400_000,
      rateLimit: 60_000,
      lockout: { attempts: 10, windowMs: 60_000, lockMs: 300_000 },
      trustProxy: false,
      maxMessageBytes: 262_144,
      durability: "normal",
      deliveryConcurrency: 256,
      listenerConcurrency: 16,
      logFormat: "text",
    };
    expect(loadConfig({}, [])).toEqual({ command: { name: "serve" }, config: expected });
  });

  test("optional settings stay absent", () => {
    const result = config();
    for (const key of ["tlsCert", "tlsKey", "baseUrl", "bootstrapKey", "metricsToken"]) expect(key in result).toBe(false);
  });

  test("loadConfig reads neither process.env nor process.argv", () => {
    process.env.FANOUT_PORT = "1234";
    try {
      expect(config().port).toBe(8443);
    } finally {
      delete process.env.FANOUT_PORT;
    }
  });
});

describe("each flag and its variable", () => {
  const cases: [flag: string, env: string, text: string, key: keyof Config, value: unknown][] = [
    ["--host", "FANOUT_HOST", "127.0.0.1", "host", "127.0.0.1"],
    ["--port", "FANOUT_PORT", "0", "port", 0],
    ["--db", "FANOUT_DB", ":memory:", "db", ":memory:"],
    ["--base-url", "FANOUT_BASE_URL", "https://fanout.example.com/", "baseUrl", "https://fanout.example.com"],
    ["--bootstrap-org", "FANOUT_BOOTSTRAP_ORG", "com.example", "bootstrapOrg", "com.example"],
    ["--bootstrap-key", "FANOUT_BOOTSTRAP_KEY", "test-key", "bootstrapKey", "test-key"],
    ["--allow-targets", "FANOUT_ALLOW_TARGETS", "127.0.0.0/8", "allowTargets", ["127.0.0.0/8"]],
    ["--retry-schedule", "FANOUT_RETRY_SCHEDULE", "1s,2m", "retryScheduleMs", [1_000, 120_000]],
    ["--delivery-timeout", "FANOUT_DELIVERY_TIMEOUT", "250ms", "deliveryTimeoutMs", 250],
    ["--liveness-interval", "FANOUT_LIVENESS_INTERVAL", "1h", "livenessIntervalMs", 3_600_000],
    ["--shutdown-timeout", "FANOUT_SHUTDOWN_TIMEOUT", "2s", "shutdownTimeoutMs", 2_000],
    ["--rate-limit", "FANOUT_RATE_LIMIT", "0", "rateLimit", 0],
    ["--lockout", "FANOUT_LOCKOUT", "3/10s:1h", "lockout", { attempts: 3, windowMs: 10_000, lockMs: 3_600_000 }],
    ["--trust-proxy", "FANOUT_TRUST_PROXY", "on", "trustProxy", true],
    ["--max-message-bytes", "FANOUT_MAX_MESSAGE_BYTES", "1024", "maxMessageBytes", 1024],
    ["--durability", "FANOUT_DURABILITY", "full", "durability", "full"],
    ["--delivery-concurrency", "FANOUT_DELIVERY_CONCURRENCY", "8", "deliveryConcurrency", 8],
    ["--listener-concurrency", "FANOUT_LISTENER_CONCURRENCY", "2", "listenerConcurrency", 2],
    ["--metrics-token", "FANOUT_METRICS_TOKEN", "scrape-0123456789abcdef", "metricsToken", "scrape-0123456789abcdef"],
    ["--log-format", "FANOUT_LOG_FORMAT", "json", "logFormat", "json"],
  ];

  for (const [flag, env, text, key, value] of cases) {
    test(`${flag} and ${env}`, () => {
      expect(config([`${flag}=${text}`])[key] as unknown).toEqual(value);
      expect(config([], { [env]: text })[key] as unknown).toEqual(value);
      if (flag !== "--trust-proxy") expect(config([flag, text])[key] as unknown).toEqual(value);
    });
  }

  test("every flag and variable is in the help text with its default", () => {
    for (const [flag, env] of cases) {
      expect(HELP_TEXT).toContain(flag);
      expect(HELP_TEXT).toContain(env);
    }
    for (const text of ["--no-tls", "FANOUT_TLS", "--tls-cert", "FANOUT_TLS_KEY", "8443", "5s,5m,30m,2h,5h,10h,10h", "10/1m:5m"]) {
      expect(HELP_TEXT).toContain(text);
    }
    for (const word of ["serve", "migrate", "orgs create", "orgs list", "backup <file>", "completion <shell>", "version", "help"]) {
      expect(HELP_TEXT).toContain(word);
    }
  });
});

describe("precedence", () => {
  test("a flag wins over its variable, which wins over the default", () => {
    const env = { FANOUT_PORT: "9000", FANOUT_DB: "/tmp/env.db" };
    const result = config(["--port", "9001"], env);
    expect(result.port).toBe(9001);
    expect(result.db).toBe("/tmp/env.db");
  });

  test("an invalid variable is not reported when its flag overrides it", () => {
    expect(config(["--port=1"], { FANOUT_PORT: "abc" }).port).toBe(1);
  });

  test("an empty variable counts as unset", () => {
    expect(config([], { FANOUT_PORT: "", FANOUT_BASE_URL: "" })).toEqual(config());
  });

  test("the last of a repeated flag wins", () => {
    expect(config(["--port", "1", "--port", "2"]).port).toBe(2);
  });
});

describe("durations", () => {
  test("parseDuration reads whole numbers with ms, s, m, h or d", () => {
    expect(parseDuration("30d")).toBe(2_592_000_000);
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("5s")).toBe(5_000);
    expect(parseDuration("2m")).toBe(120_000);
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("0s")).toBe(0);
  });

  test("parseDuration refuses anything else", () => {
    for (const text of ["", "5", "1.5s", "-1s", "1w", "5 s", "1h30m", "s", "5S", "1e3ms"]) {
      expect(() => parseDuration(text)).toThrow(ConfigError);
    }
    expect(() => parseDuration("5")).toThrow("invalid duration '5'");
  });

  test("invalid duration settings name their flag or variable", () => {
    expect(errorOf(["--delivery-timeout", "15"])).toStartWith("invalid --delivery-timeout: expected a duration");
    expect(errorOf([], { FANOUT_LIVENESS_INTERVAL: "soon" })).toStartWith("invalid FANOUT_LIVENESS_INTERVAL:");
    expect(errorOf(["--delivery-timeout=0s"])).toContain("got '0s'");
    expect(errorOf(["--shutdown-timeout=600h"])).toContain("at most 596h");
    expect(config(["--shutdown-timeout=0s"]).shutdownTimeoutMs).toBe(0);
  });

  test("a retry schedule is a comma list of at least one duration", () => {
    expect(config(["--retry-schedule", "1s, 1m ,1h"]).retryScheduleMs).toEqual([1_000, 60_000, 3_600_000]);
    expect(config(["--retry-schedule", "0s"]).retryScheduleMs).toEqual([0]);
    for (const text of ["", "1s,", "1s,,2s", "1s,later", "1s;2s"]) {
      expect(errorOf([`--retry-schedule=${text}`])).toStartWith("invalid --retry-schedule: expected a comma list");
    }
  });
});

describe("lockout", () => {
  test("N/window:lock", () => {
    expect(config(["--lockout", "1/250ms:1s"]).lockout).toEqual({ attempts: 1, windowMs: 250, lockMs: 1_000 });
  });

  test("malformed or out-of-range lockouts are refused", () => {
    for (const text of ["10", "10/1m", "10:1m/5m", "x/1m:5m", "0/1m:5m", "10/0s:5m", "10/1m:0s", "10/1m:5", "-1/1m:5m"]) {
      expect(errorOf(["--lockout", text])).toBe(
        `invalid --lockout: expected N/window:lock such as 10/1m:5m (N at least 1, durations above 0), got '${text}'`,
      );
    }
  });
});

describe("allow targets", () => {
  test("CIDRs are validated and written canonically; a bare address covers itself", () => {
    const text = "127.0.0.0/8, 10.0.0.1,::1,2001:DB8:0:0::/32,0.0.0.0/0";
    expect(config(["--allow-targets", text]).allowTargets)
      .toEqual(["127.0.0.0/8", "10.0.0.1/32", "::1/128", "2001:db8::/32", "0.0.0.0/0"]);
  });

  test("an empty list is allowed", () => {
    expect(config(["--allow-targets="]).allowTargets).toEqual([]);
  });

  test("invalid CIDRs are refused", () => {
    const bad = ["127.1", "0x7f000001", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8/8", "10.0.0.0/a",
      "fe80::1%eth0", "example.com", "127.0.0.0/8,", "256.0.0.1", "10.0.0.0/-1"];
    for (const text of bad) {
      expect(errorOf([], { FANOUT_ALLOW_TARGETS: text })).toBe(
        `invalid FANOUT_ALLOW_TARGETS: expected a comma list of CIDRs such as 127.0.0.0/8,::1/128, got '${text}'`,
      );
    }
  });
});

describe("bootstrap key", () => {
  test("8 or more printable ASCII characters are taken as given", () => {
    expect(config(["--bootstrap-key", "12345678"]).bootstrapKey).toBe("12345678");
    expect(config(["--bootstrap-key=!~a-Z_0:x"]).bootstrapKey).toBe("!~a-Z_0:x");
  });

  test("short keys, spaces, control and non-ASCII characters are refused without echoing the key", () => {
    for (const key of ["1234567", "has space", "tab\tkey12", "clé-secrète", ""]) {
      const message = errorOf([`--bootstrap-key=${key}`]);
      expect(message).toStartWith("invalid --bootstrap-key: expected 8 or more printable ASCII characters");
      expect(message).toEndWith(`got ${key.length} characters`);
      if (key) expect(message).not.toContain(key);
    }
  });
});

describe("metrics token and log format", () => {
  test("a metrics token is 16 or more printable ASCII characters, refused without echoing it", () => {
    for (const token of ["only-15-chars-x", "has space in the token", "clé-secrète-de-métriques"]) {
      const message = errorOf([], { FANOUT_METRICS_TOKEN: token });
      expect(message).toStartWith("invalid FANOUT_METRICS_TOKEN: expected 16 or more printable ASCII characters");
      expect(message).not.toContain(token);
    }
    expect(config(["--metrics-token=0123456789abcdef"]).metricsToken).toBe("0123456789abcdef");
  });

  test("the log format is text or json", () => {
    expect(errorOf(["--log-format", "yaml"])).toBe("invalid --log-format: expected text or json, got 'yaml'");
  });
});

describe("organization names", () => {
  test("isOrgName accepts lowercase reverse-DNS names", () => {
    for (const name of ["com.example", "local.fanout", "io.x-y.z9", "0.a", "a.b.c.d", `a.${"b".repeat(251)}`]) {
      expect(isOrgName(name)).toBe(true);
    }
  });

  test("isOrgName refuses everything else", () => {
    const bad = ["com", "", "Com.example", "com..example", ".com.example", "com.example.", "com.-example",
      "com.ex_ample", "com.exämple", "com example.x", `a.${"b".repeat(252)}`];
    for (const name of bad) expect(isOrgName(name)).toBe(false);
  });

  test("--bootstrap-org must be an organization name", () => {
    expect(errorOf(["--bootstrap-org", "fanout"]))
      .toBe("invalid --bootstrap-org: expected a lowercase reverse-DNS name such as com.example, got 'fanout'");
  });
});

describe("tls", () => {
  test("--no-tls and FANOUT_TLS=off turn TLS off", () => {
    expect(config(["--no-tls"]).tls).toBe(false);
    expect(config([], { FANOUT_TLS: "off" }).tls).toBe(false);
    expect(config([], { FANOUT_TLS: "on" }).tls).toBe(true);
    expect(config(["--no-tls"], { FANOUT_TLS: "on" }).tls).toBe(false);
  });

  test("--no-tls takes no value and FANOUT_TLS must be on or off", () => {
    expect(errorOf(["--no-tls=yes"])).toBe("invalid --no-tls: it takes no value");
    expect(errorOf([], { FANOUT_TLS: "maybe" })).toBe("invalid FANOUT_TLS: expected on or off, got 'maybe'");
  });

  test("certificate and key come as a pair", () => {
    const both = config(["--tls-cert", "cert.pem"], { FANOUT_TLS_KEY: "key.pem" });
    expect([both.tlsCert, both.tlsKey]).toEqual(["cert.pem", "key.pem"]);
    expect(errorOf(["--tls-cert", "cert.pem"]))
      .toBe("--tls-cert needs --tls-key (FANOUT_TLS_KEY) too: give both PEM files or neither");
    expect(errorOf([], { FANOUT_TLS_KEY: "key.pem" }))
      .toBe("FANOUT_TLS_KEY needs --tls-cert (FANOUT_TLS_CERT) too: give both PEM files or neither");
  });
});

describe("other values", () => {
  test("trust proxy: a bare flag is on; values and variables are booleans", () => {
    expect(config(["--trust-proxy", "serve"]).trustProxy).toBe(true);
    expect(config(["--trust-proxy=off"], { FANOUT_TRUST_PROXY: "on" }).trustProxy).toBe(false);
    for (const [text, value] of [["true", true], ["1", true], ["ON", true], ["false", false], ["0", false]] as const) {
      expect(config([], { FANOUT_TRUST_PROXY: text }).trustProxy).toBe(value);
    }
    expect(errorOf([], { FANOUT_TRUST_PROXY: "yes" })).toStartWith("invalid FANOUT_TRUST_PROXY:");
  });

  test("port bounds", () => {
    expect(config(["--port", "65535"]).port).toBe(65535);
    expect(errorOf(["--port", "abc"])).toBe("invalid --port: expected an integer from 0 to 65535, got 'abc'");
    for (const text of ["65536", "-1", "1.5", "", " 80", "0x50"]) expect(errorOf([`--port=${text}`])).toStartWith("invalid --port:");
  });

  test("base URL must be an absolute http(s) origin", () => {
    expect(config(["--base-url", "http://LOCALHOST:8080"]).baseUrl).toBe("http://localhost:8080");
    expect(config(["--base-url", "https://[::1]:8443/"]).baseUrl).toBe("https://[::1]:8443");
    const bad = ["fanout.example.com", "/v1", "ftp://example.com", "https://example.com/api", "https://example.com/?a=1",
      "https://example.com#x", "https://user:pw@example.com", "https://"];
    for (const text of bad) expect(errorOf(["--base-url", text])).toStartWith("invalid --base-url: expected an http(s) origin");
  });

  test("integers and enumerations are bounded", () => {
    expect(errorOf(["--rate-limit", "-5"])).toStartWith("invalid --rate-limit: expected a non-negative integer");
    expect(errorOf(["--max-message-bytes", "0"])).toBe("invalid --max-message-bytes: expected a positive integer, got '0'");
    expect(errorOf([], { FANOUT_DELIVERY_CONCURRENCY: "0" })).toStartWith("invalid FANOUT_DELIVERY_CONCURRENCY:");
    expect(errorOf(["--listener-concurrency", "99999999999999999999"])).toStartWith("invalid --listener-concurrency:");
    expect(errorOf(["--durability", "FULL"])).toBe("invalid --durability: expected normal or full, got 'FULL'");
    expect(errorOf(["--db="])).toStartWith("invalid --db:");
    expect(errorOf(["--host", "a b"])).toStartWith("invalid --host:");
  });

  test("--db takes a PostgreSQL URL; a malformed one is refused without echoing its password", () => {
    for (const url of ["postgres://u:pw@db.example.com:5433/fanout", "postgresql://u@127.0.0.1/fanout?sslmode=require", "postgres://[::1]/f"]) {
      expect(config(["--db", url]).db).toBe(url);
    }
    const bad: [string, string][] = [
      ["postgres://u:hunter22@db.example.com:5432/", "the URL must name one database"],
      ["postgres://u:hunter22@/fanout", "not a valid URL"],
      ["postgres:///fanout", "names no host"],
      ["postgres://u:hunter22@h:99999/fanout", "not a valid URL"],
      ["postgres://u:hunter22@h/fanout?sslmode=maybe", "sslmode must be one of"],
      ["postgresql://u:hunter22@h/fanout?ssl=true", "unknown URL parameter 'ssl'"],
    ];
    for (const [url, why] of bad) {
      const message = errorOf(["--db", url]);
      expect(message).toStartWith("invalid --db: expected a file path, :memory: or postgres://");
      expect(message).toContain(why);
      expect(message).not.toContain("hunter22");
    }
    expect(config(["--db-pool", "5"]).dbPool).toBe(5);
    expect(errorOf([], { FANOUT_DB_POOL: "4" })).toBe("invalid FANOUT_DB_POOL: expected an integer from 5 to 1000, got '4'");
  });
});

describe("commands", () => {
  test("command words", () => {
    expect(command(["serve"])).toEqual({ name: "serve" });
    expect(command(["migrate"])).toEqual({ name: "migrate" });
    expect(command(["version"])).toEqual({ name: "version" });
    expect(command(["help"])).toEqual({ name: "help" });
    expect(command(["orgs", "create", "com.example"])).toEqual({ name: "orgs-create", orgName: "com.example" });
    expect(command(["orgs", "list"])).toEqual({ name: "orgs-list" });
    expect(command(["backup", "/tmp/copy.db"])).toEqual({ name: "backup", file: "/tmp/copy.db" });
    expect(command(["completion", "zsh"])).toEqual({ name: "completion", shell: "zsh" });
  });

  test("flags may stand before, between or after command words", () => {
    const result = loadConfig({}, ["--db", "a.db", "orgs", "--port=1", "create", "com.example", "--no-tls"]);
    expect(result.command).toEqual({ name: "orgs-create", orgName: "com.example" });
    expect([result.config.db, result.config.port, result.config.tls]).toEqual(["a.db", 1, false]);
  });

  test("-- ends the flags", () => {
    expect(command(["backup", "--", "--odd-name.db"])).toEqual({ name: "backup", file: "--odd-name.db" });
  });

  test("--help, -h, --version and -v win anywhere and ignore invalid settings", () => {
    expect(command(["orgs", "create", "--help"])).toEqual({ name: "help" });
    expect(command(["--bogus", "-h"])).toEqual({ name: "help" });
    expect(command(["serve", "--version"], { FANOUT_PORT: "abc" })).toEqual({ name: "version" });
    expect(command(["-v", "--bogus"], { FANOUT_PORT: "abc" })).toEqual({ name: "version" });
    expect(command(["completion", "bash"], { FANOUT_PORT: "abc" })).toEqual({ name: "completion", shell: "bash" });
    expect(loadConfig({ FANOUT_PORT: "abc" }, ["version"]).config.port).toBe(8443);
    expect(command(["help"], { FANOUT_TLS_CERT: "only-cert.pem" })).toEqual({ name: "help" });
  });

  test("after --, -h and -v are arguments", () => {
    expect(command(["backup", "--", "-v"])).toEqual({ name: "backup", file: "-v" });
    expect(command(["backup", "--", "-h"])).toEqual({ name: "backup", file: "-h" });
  });

  test("missing arguments", () => {
    expect(errorOf(["backup"])).toBe("missing argument for backup: expected a file path (fanout backup <file>)");
    expect(errorOf(["orgs", "create"])).toStartWith("missing argument for orgs create:");
    expect(errorOf(["orgs"])).toBe("missing subcommand for orgs: expected create or list");
    expect(errorOf(["completion"])).toBe("missing shell for completion: expected bash, zsh or fish (fanout completion <shell>)");
    expect(errorOf(["--port"])).toBe("missing value for --port: expected an integer from 0 to 65535");
    expect(errorOf(["--db", "--no-tls"])).toStartWith("missing value for --db:");
  });

  test("invalid organization names are refused by orgs create", () => {
    expect(errorOf(["orgs", "create", "Example"]))
      .toBe("invalid organization name 'Example': expected a lowercase reverse-DNS name such as com.example");
  });

  test("unknown commands, subcommands, flags and extra arguments", () => {
    expect(errorOf(["start"])).toBe("unknown command 'start' (see fanout help)");
    expect(errorOf(["orgs", "delete", "com.example"])).toBe("unknown subcommand 'delete' for orgs: expected create or list");
    expect(errorOf(["completion", "tcsh"])).toBe("unknown shell 'tcsh' for completion: expected bash, zsh or fish (fanout completion <shell>)");
    expect(errorOf(["completion", "bash", "zsh"])).toBe("unexpected argument 'zsh' after completion <shell>");
    expect(errorOf(["--prot", "8443"])).toBe("unknown flag --prot (see fanout help)");
    expect(errorOf(["-p", "8443"])).toBe("unknown flag -p (see fanout help)");
    expect(errorOf(["--tls"])).toBe("unknown flag --tls (see fanout help)");
    expect(errorOf(["serve", "now"])).toBe("unexpected argument 'now' after serve");
    expect(errorOf(["backup", "a.db", "b.db"])).toBe("unexpected argument 'b.db' after backup <file>");
    expect(errorOf(["orgs", "list", "all"])).toBe("unexpected argument 'all' after orgs list");
  });

  test("settings are validated for every other command", () => {
    expect(errorOf(["migrate"], { FANOUT_DB: "", FANOUT_PORT: "x" })).toStartWith("invalid FANOUT_PORT:");
  });
});
