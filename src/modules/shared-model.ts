/** TypeBox pieces shared by several modules' models. */
import { t, type TSchema } from "elysia";

type TProperties = Record<string, TSchema>;

/** ResourceName (PRODUCT §4): 1 to 128 characters, no control characters. */
export const ResourceName = t.String({ minLength: 1, maxLength: 128, pattern: "^[^\\u0000-\\u001F\\u007F]+$", description: "1 to 128 characters, no control characters" });
export const ResourceId = t.String({ minLength: 1, maxLength: 64, description: "opaque id assigned by the service" });
export const LinkObject = t.Object({ href: t.String() });
export const Links = t.Record(t.String(), LinkObject, { description: "`self` and one link per sub-resource" });
export const PrettyQuery = { pretty: t.Optional(t.String({ description: "indent the JSON response: `true`, `1` or empty" })) };
/** A route's query: `pretty` and the route's own parameters. Unknown parameters are ignored, as clients expect of a URL. */
export const Query = <P extends TProperties>(props: P = {} as P) => t.Object({ ...PrettyQuery, ...props }, { additionalProperties: true });
