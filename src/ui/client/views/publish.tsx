/** Publishing a test message to a queue; with a schema, the data starts as a sample that matches it. */
import { useState } from "preact/hooks";
import { ApiError, call, enc } from "../lib/api.ts";
import { useAction } from "../lib/poll.ts";
import { Link } from "../lib/router.ts";
import { Card } from "../parts/layout.tsx";
import { ErrorBox } from "../parts/notices.tsx";
import { Field, parseJson, value } from "../parts/fields.tsx";
import type { Queue } from "./queue.tsx";

type Directive = { type?: string; props?: Record<string, Directive>; items?: Directive; enum?: string[]; min?: number | null; pattern?: string | null };

const STRINGS = ["text", "user@example.com", "https://example.com", "2025-01-01", "abc123", "ABC", "a", "1"];

/** A string for a string directive: its first allowed constant, or a common value its pattern and length allow. */
function sampleString(d: Directive): string {
  if (d.enum?.length) return d.enum[0]!;
  const min = typeof d.min === "number" ? d.min : 0;
  let pattern: RegExp | null = null;
  try {
    pattern = d.pattern ? new RegExp(d.pattern) : null;
  } catch {
    pattern = null; // the server refuses such a schema; nothing to match here
  }
  return STRINGS.find((s) => s.length >= min && (!pattern || pattern.test(s))) ?? "x".repeat(Math.max(min, 1));
}

/** A value that satisfies one directive of a queue schema, for a starting point. */
function sample(d: Directive): unknown {
  switch (d.type) {
    case "object": return Object.fromEntries(Object.entries(d.props ?? {}).map(([k, v]) => [k, sample(v)]));
    case "array": return d.items ? [sample(d.items)] : [];
    case "number": return typeof d.min === "number" ? d.min : 1;
    case "string": return sampleString(d);
    default: return null;
  }
}

const starting = (queue: Queue) =>
  JSON.stringify(queue.schema ? sample({ type: "object", props: queue.schema as Record<string, Directive> }) : { hello: "world" }, null, 2);

export function PublishTab({ queue }: { queue: Queue }) {
  const [name, setName] = useState("");
  const [data, setData] = useState(() => starting(queue));
  const [published, setPublished] = useState<{ id: string; name: string | null } | null>(null);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    setPublished(null);
    void action.run(async () => {
      const parsed = parseJson(data, "The data");
      if (!parsed.ok) throw new ApiError(0, "Check the data", parsed.message);
      const body = name.trim() ? { name: name.trim(), data: parsed.value } : { data: parsed.value };
      const reply = await call<{ message: { id: string; name: string | null } }>("POST", `/v1/queues/${enc(queue.id)}/messages`, { body });
      setPublished(reply.body.message);
      return null;
    });
  };
  return (
    <Card title="Publish a test message">
      <form class="form" onSubmit={submit}>
        <Field label="Name (optional)">
          <input name="message-name" maxLength={128} value={name} onInput={(e) => setName(value(e))} />
        </Field>
        <Field label="Data (JSON)" hint={queue.schema ? "Checked against the queue's schema; a message that does not match is refused with every failing path." : "Any JSON value; a string is sent as a string."} wide>
          <textarea name="message-data" class="mono" rows={10} spellcheck={false} value={data} onInput={(e) => setData(value(e))} />
        </Field>
        <ErrorBox error={action.error} context="The message was not published" />
        {published && (
          <div class="notice notice-ok" role="status">
            Published <code>{published.id}</code>.{" "}
            <Link to={`/queues/${queue.id}/messages/${published.id}`}>Follow its deliveries →</Link>
          </div>
        )}
        <div class="form-actions"><button type="submit" class="btn btn-primary" disabled={action.busy}>Publish</button></div>
      </form>
    </Card>
  );
}
