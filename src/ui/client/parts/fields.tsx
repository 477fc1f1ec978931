/** Form fields: a label above, a hint below, the control in between. */
import type { ComponentChildren } from "preact";

type FieldProps = { label: string; hint?: ComponentChildren; children: ComponentChildren; wide?: boolean; narrow?: boolean };

/** `wide` spans a form grid's columns; `narrow` keeps a short control (a select) from stretching across a desktop. */
export function Field({ label, hint, children, wide, narrow }: FieldProps) {
  return (
    <label class={`field ${wide ? "field-wide" : ""} ${narrow ? "field-narrow" : ""}`}>
      <span class="field-label">{label}</span>
      {children}
      {hint && <span class="field-hint">{hint}</span>}
    </label>
  );
}

/** Reads an input's value in an onInput handler. */
export const value = (event: Event) => (event.currentTarget as HTMLInputElement).value;

export function parseJson(text: string, what: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `${what} is not valid JSON: ${(error as Error).message}` };
  }
}
