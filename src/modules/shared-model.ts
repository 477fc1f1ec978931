/** TypeBox pieces shared by several modules' models. */
import { t, type TSchema } from "elysia";
import { OptionalKind } from "@sinclair/typebox";
import { numericMember } from "../http/validation.ts";

type TProperties = Record<string, TSchema>;

/** ResourceName: 1 to 128 characters, no control characters (docs/api.md). */
export const ResourceName = t.String({ minLength: 1, maxLength: 128, pattern: "^[^\\u0000-\\u001F\\u007F]+$", description: "1 to 128 characters, no control characters" });
export const ResourceId = t.String({ minLength: 1, maxLength: 64, description: "opaque id assigned by the service" });
export const LinkObject = t.Object({ href: t.String() });
export const Links = t.Record(t.String(), LinkObject, { description: "`self` and one link per sub-resource" });
export const Nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()]);
export const PrettyQuery = { pretty: t.Optional(t.String({ description: "indent the JSON response: `true`, `1` or empty" })) };

/**
 * Elysia's t.Integer turns a query string into a number and checks its bounds after the query's own check, and
 * that failure comes without the parameter's name. The parameter is made again with Elysia's `error` hook
 * returning its name, which http/validation.ts puts in the error's `path`.
 */
function named<S extends TSchema>(name: string, schema: S): S {
  const numeric = numericMember(schema);
  if (numeric?.type !== "integer") return schema;
  const { type: _type, ...options } = numeric;
  const integer = t.Integer({ ...options, error: () => ({ path: name }) });
  return (OptionalKind in schema ? t.Optional(integer) : integer) as unknown as S;
}

/** A route's query: `pretty` and the route's own parameters. Unknown parameters are ignored, as clients expect of a URL. */
export const Query = <P extends TProperties>(props: P = {} as P) =>
  t.Object(
    Object.fromEntries(Object.entries({ ...PrettyQuery, ...props }).map(([name, schema]) => [name, named(name, schema)])) as typeof PrettyQuery & P,
    { additionalProperties: true },
  );
