/**
 * SQL for a statement prepared once and run many times. In three places SQLite plans with a parameter's bound
 * value: a LIMIT, a term compared with a partial index's condition (is the index usable?), and a LIKE pattern.
 * It then marks the statement to be planned again whenever that parameter is bound, which bun:sqlite does on
 * every run: 10-30 µs a run for the claim's statements, more than the statement itself (docs/performance.md,
 * "Statements planned once"). A unary plus makes each parameter an expression the planner does not look into;
 * the value and its affinity are unchanged (SQLite's "+" is a no-op), and each statement keeps its
 * index (delivery-statements.test.ts checks the plans). Our partial indexes are matched by literals in the SQL, never by
 * bound values, so nothing is lost.
 */

// A string literal (kept as is: '$[#]' is a JSON path), or a parameter: ?, ?NNN, :name, @name, $name.
const TOKEN = /'(?:[^']|'')*'|(?<![+\w])(\?\d*|[:@$][A-Za-z_]\w*)/g;

export function planOnce(sql: string): string {
  return sql.replace(TOKEN, (whole, param: string | undefined) => (param ? `+${param}` : whole));
}
