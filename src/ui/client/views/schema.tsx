/** A queue's message schema: one line per field with its type and rules, then the schema as stored. */
import { Card, Id } from "../parts/layout.tsx";
import { Empty } from "../parts/notices.tsx";
import { Json } from "../parts/data.tsx";
import type { Queue } from "./queue.tsx";

type Directive = {
  type?: string; props?: Record<string, Directive>; items?: Directive; required?: boolean; strict?: boolean;
  min?: number | null; max?: number | null; pattern?: string | null; enum?: unknown[] | null;
};
type Row = { path: string; type: string; rules: string[] };

function typeOf(d: Directive): string {
  return d.type === "array" && d.items ? `array of ${typeOf(d.items)}` : (d.type ?? "?");
}

function rulesOf(d: Directive): string[] {
  const rules = [d.required === false ? "optional" : "required"];
  if (d.type === "object" && d.strict === false) rules.push("other properties allowed");
  const unit = d.type === "string" ? " characters" : "";
  if (typeof d.min === "number") rules.push(`at least ${d.min}${unit}`);
  if (typeof d.max === "number") rules.push(`at most ${d.max}${unit}`);
  if (d.pattern) rules.push(`matches ${d.pattern}`);
  if (d.enum?.length) rules.push(`one of ${d.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  return rules;
}

/** Fields in schema order; array items appear as `path[]`. */
function fields(props: Record<string, Directive>, prefix = ""): Row[] {
  return Object.entries(props).flatMap(([name, d]) => {
    const path = `${prefix}${name}`;
    const own: Row = { path, type: typeOf(d), rules: rulesOf(d) };
    let inner = d;
    let at = path;
    while (inner.type === "array" && inner.items) (inner = inner.items), (at = `${at}[]`);
    return [own, ...(inner.type === "object" && inner.props ? fields(inner.props, `${at}.`) : [])];
  });
}

export function SchemaTab({ queue }: { queue: Queue }) {
  if (!queue.schema) {
    return (
      <Card title="Message schema">
        <Empty title="This queue has no schema: it accepts any JSON data.">
          A schema is set when the queue is created, or replaced with <code>PUT /v1/queues/{queue.id}</code>.
        </Empty>
      </Card>
    );
  }
  return (
    <>
      <Card title="Fields">
        <p class="muted small">A message whose data does not match is refused with 422, naming every failing path; properties not listed are refused too.</p>
        <table class="table table-stack">
          <thead><tr><th>Field</th><th>Type</th><th>Rules</th></tr></thead>
          <tbody>
            {fields(queue.schema as Record<string, Directive>).map((r) => (
              <tr key={r.path}>
                <td data-label="Field"><code class="strong">{r.path}</code></td>
                <td data-label="Type">{r.type}</td>
                <td data-label="Rules" class="muted">{r.rules.join(" · ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="As stored">
        <p class="muted small">Schema id <Id value={queue.schema_id ?? ""} /></p>
        <Json value={queue.schema} />
      </Card>
    </>
  );
}
