import { describe, expect, test } from "bun:test";
import { consoleLogger, formatLine } from "./log.ts";
import { LogEvents, MISSED_LINES_PER_LISTENER, type Missed } from "./log-events.ts";

const at = new Date("2026-11-25T10:00:00.000Z");

describe("formats", () => {
  test("json: one object per line with time, level and msg first, then the fields", () => {
    const line = formatLine("json", at, "warn", "listener down", { listener: "lst_1", queue: "q_1", count: 3, gone: undefined, ok: true });
    expect(line).not.toContain("\n");
    expect(line).toBe('{"time":"2026-11-25T10:00:00.000Z","level":"warn","msg":"listener down","listener":"lst_1","queue":"q_1","count":3,"ok":true}');
  });

  test("json: a field cannot replace the line's own time, level or msg", () => {
    expect(JSON.parse(formatLine("json", at, "info", "real", { msg: "forged", level: "error", time: "then" }))).toEqual({
      time: "2026-11-25T10:00:00.000Z", level: "info", msg: "real",
    });
  });

  test("text: time, level, message, then key=value with values as JSON", () => {
    expect(formatLine("text", at, "info", "stopped", { signal: "SIGTERM", n: 2 })).toBe('2026-11-25T10:00:00.000Z info stopped signal="SIGTERM" n=2');
  });

  test("a message or value with a newline stays on one line in both formats", () => {
    for (const format of ["text", "json"] as const) expect(formatLine(format, at, "error", "a\nb", { error: "x\ny" }).split("\n")).toHaveLength(1);
  });

  test("consoleLogger writes the chosen format", () => {
    const lines: string[] = [];
    consoleLogger({ format: "json", write: (l) => lines.push(l) }).error("boom", { requestId: "r1" });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "error", msg: "boom", requestId: "r1" });
  });
});

function recorder() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { lines, events: new LogEvents({ info: record("info"), warn: record("warn"), error: record("error") }) };
}

describe("log events", () => {
  test("a missed message is a line with its listener, queue and message; many of one listener are one line", () => {
    const { lines, events } = recorder();
    const miss = (listener: string, i: number): Missed => ({ listener, queue: "q_1", message: `msg_${i}`, reason: "retry schedule spent" });
    const many = Array.from({ length: MISSED_LINES_PER_LISTENER + 1 }, (_, i) => miss("lst_many", i));
    events.messagesMissed([miss("lst_one", 0), ...many]);
    expect(lines).toEqual([
      { level: "warn", msg: "message missed", fields: { listener: "lst_one", queue: "q_1", message: "msg_0", reason: "retry schedule spent" } },
      { level: "warn", msg: "messages missed", fields: { listener: "lst_many", queue: "q_1", count: 11, first_message: "msg_0", last_message: "msg_10", reason: "retry schedule spent" } },
    ]);
  });

  test("a storage error is logged once per cause until it recovers", () => {
    const { lines, events } = recorder();
    for (let i = 0; i < 5; i++) events.storageError("database is full", new Error("SQLITE_FULL"));
    events.storageError("checkpoint failed", "disk I/O error");
    events.storageRecovered("database is full");
    events.storageRecovered("database is full");
    events.storageError("database is full", new Error("SQLITE_FULL"));
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      "error storage error: database is full", "error storage error: checkpoint failed", "info storage recovered: database is full",
      "error storage error: database is full",
    ]);
    expect(lines[0]!.fields).toEqual({ error: "Error: SQLITE_FULL", source: "store" });
  });

  test("a cause several sources meet is one line, and its recovery one line once the last of them recovers", () => {
    const { lines, events } = recorder();
    events.storageError("disk full", "SQLITE_FULL", "writes");
    events.storageError("disk full", "SQLITE_FULL", "delivery");
    events.storageError("disk full", "SQLITE_FULL", "checkpoint");
    events.storageRecovered("disk full", "writes");
    events.storageRecovered("disk full", "writes");
    events.storageRecovered("disk full", "checkpoint");
    expect(lines.map((l) => l.msg)).toEqual(["storage error: disk full"]);
    events.storageRecovered("disk full", "delivery");
    expect(lines.map((l) => l.msg)).toEqual(["storage error: disk full", "storage recovered: disk full"]);
    expect(lines[0]!.fields).toEqual({ error: "SQLITE_FULL", source: "writes" });
  });

  test("liveness changes: down and unstable are warnings, coming back is info; a retention sweep that deleted nothing is silent", () => {
    const { lines, events } = recorder();
    events.livenessChanged({ listener: "l", queue: "q", from: "unstable", to: "down", reason: "status 503" });
    events.livenessChanged({ listener: "l", queue: "q", from: "down", to: "stable", resumed: 4 });
    events.livenessChanged({ listener: "l", queue: "q", from: "stable", to: "unstable", reason: "connection refused" });
    events.livenessChanged({ listener: "l", queue: "q", from: "pending", to: "stable" });
    events.retentionSwept({ messages: 0, deliveries: 0, attempts: 0 });
    events.retentionSwept({ messages: 2, deliveries: 3, attempts: 5 });
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      "warn listener down; its deliveries wait", "info listener back up; its deliveries resume",
      "warn listener unstable: a liveness probe failed", "info listener stable", "info retention sweep deleted old messages",
    ]);
    expect(lines[1]!.fields).toMatchObject({ listener: "l", queue: "q", from: "down", to: "stable", resumed: 4 });
  });
});
