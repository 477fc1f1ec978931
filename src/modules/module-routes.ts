import { Elysia } from "elysia";

/**
 * The Elysia instance of one module's routes, grouped under one OpenAPI tag: the tag is the default
 * `detail.tags` of every route declared on it (a route's own `detail.tags` wins).
 */
export function moduleRoutes(tag: string) {
  return new Elysia({ tags: [tag] });
}
