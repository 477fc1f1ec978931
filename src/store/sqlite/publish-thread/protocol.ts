// The protocol between the API thread (client.ts) and the publish thread (thread.ts):
//
//   main → thread   open      once, first: the database file (already migrated) and its durability.
//                   publish   publishes gathered on the API thread (client.ts says when it sends them), each with
//                             a number `n` the answer refers to. Few messages, and flat ones: a cross-thread
//                             message costs µs on each side, and Bun clones arrays of primitives about three
//                             times faster than nested objects.
//                   close     finish what was sent, close the database, answer `closed`.
//   thread → main   done      the outcomes of one `publish` message, each after the transaction holding it
//                             committed (or failed): a 200 still means committed. `published` is flat,
//                             [n, id, n, id, …]; `failed` holds the rest.
//                   closed    the database is closed; the thread may be terminated.
//                   fatal     the thread cannot go on (it could not open the database); it exits.
//
// Errors cross as data (WireError) and are rebuilt as the same classes, so callers tell a changed schema (retry)
// from a missing queue (404) or a duplicate (409) exactly as they do in-process.
import { AppError, SchemaChanged, type FieldError } from "../../../lib/errors.ts";
import type { Durability } from "../db.ts";
import type { Actor, PublishInput } from "../../index.ts";

/** One publish: [n, orgId, queueId, name, data, schemaId, now, actor key id, actor key name]. */
export type PublishCommand = [number, string, string, string | null, string, string | null | undefined, number, string, string];

export function toCommand(n: number, orgId: string, queueId: string, input: PublishInput, now: number, actor: Actor): PublishCommand {
  return [n, orgId, queueId, input.name, input.data, input.schemaId, now, actor.keyId, actor.keyName];
}

export function fromCommand(c: PublishCommand) {
  const [n, orgId, queueId, name, data, schemaId, now, keyId, keyName] = c;
  const input: PublishInput = { name, data, schemaId };
  return { n, orgId, queueId, input, now, actor: { keyId, keyName } };
}

export type WireError =
  | { kind: "schema-changed" }
  | { kind: "app"; status: number; detail?: string; errors?: FieldError[]; headers?: Record<string, string> }
  | { kind: "error"; message: string };
export type PublishFailure = { n: number; error: WireError };

export type ToThread =
  | { type: "open"; path: string; durability: Durability; temporary: boolean }
  | { type: "publish"; commands: PublishCommand[] }
  | { type: "close" };
export type FromThread =
  | { type: "done"; published: (number | string)[]; failed: PublishFailure[] }
  | { type: "closed" }
  | { type: "fatal"; error: string };

export function toWire(error: unknown): WireError {
  if (error instanceof SchemaChanged) return { kind: "schema-changed" };
  if (error instanceof AppError) return { kind: "app", status: error.status, detail: error.detail, errors: error.errors, headers: error.headers };
  return { kind: "error", message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}

export function fromWire(wire: WireError): Error {
  if (wire.kind === "schema-changed") return new SchemaChanged();
  if (wire.kind === "app") return new AppError(wire.status, wire.detail, wire.errors, wire.headers);
  return new Error(`publish thread: ${wire.message}`);
}
