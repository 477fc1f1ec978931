/**
 * Optional JSON bodies (SPEC §4: a PUT without one carries Content-Length 0). Elysia 1.4 turns malformed JSON into
 * "no body" when the body schema is optional, so routes declare the body required and parse with this hook: an
 * empty body becomes `empty`, malformed JSON still fails as 400. The trailing "json" never runs (the hook always
 * answers); it keeps application/json as the body's content type in the OpenAPI document, where the parser's
 * OPTIONAL_BODY mark makes the body optional (openapi.ts).
 */
export const OPTIONAL_BODY = Symbol("optional body");

export const jsonOrEmpty = (empty: unknown = {}) => {
  const parse = async ({ request }: { request: Request }) => {
    const text = await request.text();
    return text === "" ? empty : JSON.parse(text);
  };
  return [Object.assign(parse, { [OPTIONAL_BODY]: true }), "json" as const] as any;
};
