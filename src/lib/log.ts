/**
 * One line per event on stderr, in one of two formats:
 *   text  `<ISO time> <level> <msg> key="value" …`, for people reading a terminal or a journal;
 *   json  `{"time":"<ISO time>","level":"…","msg":"…",<fields>}`, one object per line, for log collectors.
 * Callers must never pass a secret (API key, listener secret, metrics token) or a message payload: nothing
 * here redacts. Ids go in fields named for what they identify (`listener`, `queue`, `message`); the lines
 * the service writes are named in log-events.ts.
 */
export type Fields = Record<string, string | number | boolean | null | undefined>;
export type Level = "info" | "warn" | "error";
export type LogFormat = "text" | "json";
export interface Logger {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

const RESERVED = new Set(["time", "level", "msg"]);

export function formatLine(format: LogFormat, time: Date, level: Level, msg: string, fields?: Fields): string {
  if (format === "json") {
    const entry: Record<string, unknown> = { time: time.toISOString(), level, msg };
    // A field never overwrites the line's own keys: a collector must be able to trust them.
    for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined && !RESERVED.has(k)) entry[k] = v;
    return JSON.stringify(entry);
  }
  // Field values are JSON (escaped); the message is escaped too, so one event is always one line.
  let out = `${time.toISOString()} ${level} ${msg.replace(/[\r\n]/g, (c) => (c === "\n" ? "\\n" : "\\r"))}`;
  for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) out += ` ${k}=${JSON.stringify(v)}`;
  return out;
}

/** `write` is for tests; the server writes to stderr. */
export function consoleLogger(options: { format?: LogFormat; write?: (line: string) => void } = {}): Logger {
  const format = options.format ?? "text";
  const write = options.write ?? ((line: string) => console.error(line));
  const emit = (level: Level) => (msg: string, fields?: Fields) => write(formatLine(format, new Date(), level, msg, fields));
  return { info: emit("info"), warn: emit("warn"), error: emit("error") };
}
