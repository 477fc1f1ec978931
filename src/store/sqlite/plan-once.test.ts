// planOnce must change how SQLite plans a statement, never what it computes.
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { planOnce } from "./plan-once.ts";

test("every form of parameter gets a unary plus; string literals and prefixed parameters are left alone", () => {
  expect(planOnce("SELECT ? , ?2, :a, @b, $c FROM t WHERE x = $c LIMIT $n")).toBe("SELECT +? , +?2, +:a, +@b, +$c FROM t WHERE x = +$c LIMIT +$n");
  expect(planOnce("SELECT json_insert(m, '$[#]', $id), '$a', 'it''s $x' WHERE y = +$z")).toBe(
    "SELECT json_insert(m, '$[#]', +$id), '$a', 'it''s $x' WHERE y = +$z");
});

test("values, types and comparisons are the same with the plus", () => {
  const db = new Database(":memory:", { strict: true });
  db.run("CREATE TABLE t (n INTEGER, s TEXT, state TEXT)");
  db.run("CREATE INDEX t_pending ON t (n) WHERE state = 'pending'");
  db.run("INSERT INTO t VALUES (1, 'a', 'pending'), (2, '2', 'done'), (3, NULL, 'pending')");
  const cases: [string, Record<string, unknown>][] = [
    ["SELECT $v AS v, typeof($v) AS t", { v: 7 }],
    ["SELECT $v AS v, typeof($v) AS t", { v: "7" }],
    ["SELECT $v AS v, typeof($v) AS t", { v: 1.5 }],
    ["SELECT $v AS v, typeof($v) AS t", { v: null }],
    ["SELECT $v AS v, typeof($v) AS t", { v: new Uint8Array([1, 2]) }],
    // A TEXT column compared with a number: the column's affinity applies to the parameter either way.
    ["SELECT n FROM t WHERE s = $v", { v: 2 }],
    ["SELECT n FROM t WHERE n = $v", { v: "3" }],
    ["SELECT n FROM t WHERE state = 'pending' AND n <= $v ORDER BY n LIMIT $l", { v: 3, l: 1 }],
    ["SELECT n FROM t WHERE s IS $v", { v: null }],
    ["SELECT count(*) AS c FROM t WHERE n IN (SELECT value FROM json_each($ids))", { ids: "[1,3]" }],
  ];
  for (const [sql, params] of cases) {
    expect({ sql, rows: db.query(planOnce(sql)).all(params as never) }).toEqual({ sql, rows: db.query(sql).all(params as never) });
  }
  db.close();
});
