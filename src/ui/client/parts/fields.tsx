/** Form fields: a label above, a hint below, the control in between. */
import type { ComponentChildren } from "preact";

export function Field({ label, hint, children, wide }: { label: string; hint?: ComponentChildren; children: ComponentChildren; wide?: boolean }) {
  return (
    <label class={`field ${wide ? "field-wide" : ""}`}>
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
