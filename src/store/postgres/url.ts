/**
 * `--db postgres://user:password@host:port/database?sslmode=…` (also `postgresql://`). Parsed here into explicit
 * connection options rather than handed to the driver as a URL: Bun's client lets `PGDATABASE` and friends in the
 * environment win over the URL's fields, and an explicit option wins over the environment. Pure: config.ts uses
 * it to refuse a malformed URL at start (exit 2), and nothing here ever echoes the password.
 */
export type SslMode = "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full";
export type PostgresTarget = {
  hostname: string;
  port: number;
  username: string;
  password: string;
  database: string;
  sslmode: SslMode;
};

const SSL_MODES: readonly string[] = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

export const isPostgresUrl = (text: string) => /^postgres(ql)?:\/\//i.test(text);

/** The target of a PostgreSQL URL; throws an Error whose message is one sentence without the password. */
export function parsePostgresUrl(text: string): PostgresTarget {
  if (!URL.canParse(text)) throw new Error("not a valid URL");
  const url = new URL(text);
  if (!url.hostname) throw new Error("the URL names no host");
  const database = decodeURIComponent(url.pathname.replace(/^\//, ""));
  if (!database || database.includes("/")) throw new Error("the URL must name one database (…/<database>)");
  const port = url.port === "" ? 5432 : Number(url.port);
  let sslmode: SslMode = "prefer";
  for (const [name, value] of url.searchParams) {
    if (name !== "sslmode") throw new Error(`unknown URL parameter '${name}' (only sslmode is read)`);
    if (!SSL_MODES.includes(value)) throw new Error(`sslmode must be one of ${SSL_MODES.join(", ")}`);
    sslmode = value as SslMode;
  }
  return {
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port,
    username: decodeURIComponent(url.username) || "postgres",
    password: decodeURIComponent(url.password),
    database,
    sslmode,
  };
}

/** The URL as it may be shown in logs and errors: the password replaced by `***`. */
export function redactPostgresUrl(text: string): string {
  return text.replace(/^(postgres(?:ql)?:\/\/[^:@/?#]*:)[^@/?#]*@/i, "$1***@");
}

/** `postgres://user@host:port/database`, for the start line and error messages. */
export function describeTarget(t: PostgresTarget): string {
  const host = t.hostname.includes(":") ? `[${t.hostname}]` : t.hostname;
  return `postgres://${encodeURIComponent(t.username)}@${host}:${t.port}/${encodeURIComponent(t.database)}`;
}
