/**
 * Optional JSON bodies (SPEC §4: a PUT without one carries Content-Length 0). Elysia 1.4 turns malformed JSON into
 * "no body" when the body schema is optional, so routes declare the body required and parse with this hook: an
 * empty body becomes `empty`, malformed JSON still fails as 400. The trailing "json" never runs (the hook always
 * answers); it keeps application/json as the body's content type in the OpenAPI document.
 */
export const jsonOrEmpty = (empty: unknown = {}) =>
  [
    async ({ request }: { request: Request }) => {
      const text = await request.text();
      return text === "" ? empty : JSON.parse(text);
    },
    "json" as const,
  ] as any;
