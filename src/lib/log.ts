/**
 * One line per event on stderr, `key=value` pairs after the message. Callers must never pass a secret
 * (API key, listener secret) or a message payload: nothing here redacts.
 */
export type Fields = Record<string, string | number | boolean | null | undefined>;
export interface Logger {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

function line(level: string, msg: string, fields?: Fields): string {
  let out = `${new Date().toISOString()} ${level} ${msg}`;
  for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined) out += ` ${k}=${JSON.stringify(v)}`;
  return out;
}

export function consoleLogger(quiet = false): Logger {
  return {
    info: (m, f) => void (quiet || console.error(line("info", m, f))),
    warn: (m, f) => console.error(line("warn", m, f)),
    error: (m, f) => console.error(line("error", m, f)),
  };
}
