/**
 * Idempotency keys (docs/api.md). A write under /v1 (POST, PUT, PATCH and DELETE alike) that carries
 * `Idempotency-Key` passes this step after the front door (admission.ts) and before its route (hot or app):
 *
 *   the header (400) → its record, under the organization, made in the last 24 hours:
 *     another fingerprint → 422; an answer → that answer again, with `Idempotent-Replayed: true`;
 *     no answer (the change committed, then the process stopped before answering) → 409;
 *   a request with the key still being answered in this process → 409;
 *   otherwise the request runs with the key claimed by its actor: its write records the key in the write's own
 *   transaction (store/index.ts IdempotencyClaim), and a 2xx answer is stored once rendered. An error is not
 *   kept: its write, if any, rolled back with the key, so the next request with the key runs anew.
 *
 * The fingerprint is the calling API key, the method, the path without its query and the body's canonical JSON,
 * so formatting and key order do not matter, and another API key of the organization cannot be handed an answer
 * (the secret of a new API key) that its own scopes might refuse. A replay passes the lockout and the rate
 * limit like any request: it is one, and it costs a read. The store holds the key only as a hash, and the answer
 * sealed (AES-256-GCM) under a key derived from the Idempotency-Key, which only the client knows.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { Deps } from "./context.ts";
import type { IdempotencyClaim } from "../store/index.ts";
import { canonicalJson } from "../lib/canonical-json.ts";
import { errorResponse } from "./errors.ts";
import { isGated, type Entrance, type Entry } from "./admission.ts";

/** How long a key is remembered; older records are ignored, and swept (modules/events/sweep.ts). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
const IDEMPOTENCY_HEADER = "idempotency-key";
const REPLAYED_HEADER = "idempotent-replayed";

const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
/** Whether requests of `method` take the header (writes, which a client may retry); the OpenAPI document asks too. */
export const takesIdempotencyKey = (method: string) => method === "POST" || method === "PUT" || method === "DELETE" || method === "PATCH";
const JSON_TYPE = { "content-type": "application/json" };

type Answer = { status: number; body: Uint8Array };

const hashOf = (label: string, orgId: string, key: string) => createHash("sha256").update(`fanout ${label}\n${orgId}\n${key}`).digest();

/** The answer sealed under `secret`; the record's key hash and the status are bound to it (additional data). */
function seal(secret: Buffer, keyHash: string, answer: Answer): Uint8Array {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", secret, iv).setAAD(Buffer.from(`${keyHash}\n${answer.status}`));
  const sealed = Buffer.concat([cipher.update(answer.body), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

function unseal(secret: Buffer, keyHash: string, stored: Answer): Uint8Array {
  const data = Buffer.from(stored.body);
  const decipher = createDecipheriv("aes-256-gcm", secret, data.subarray(0, 12)).setAAD(Buffer.from(`${keyHash}\n${stored.status}`));
  decipher.setAuthTag(data.subarray(12, 28));
  return Buffer.concat([decipher.update(data.subarray(28)), decipher.final()]);
}

/** The body's canonical JSON ("" for none), or null when it is not JSON (the route answers its 400). */
function canonicalBody(text: string): string | null {
  if (text === "") return "";
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return null; // not JSON: the request runs without a key, and its route refuses it
  }
}

const refusals = {
  badKey: () => errorResponse(400, "The Idempotency-Key header must be 1 to 255 printable ASCII characters."),
  otherRequest: () =>
    errorResponse(422, "This Idempotency-Key was used in the last 24 hours for another request (another method, path, body or API key)."),
  inFlight: () => errorResponse(409, "A request with this Idempotency-Key is still being answered; try again once it is."),
  lostAnswer: () =>
    errorResponse(409, "The first request with this Idempotency-Key was committed, but its answer was lost (the service stopped before answering); it is not made again."),
};

/**
 * Returns the step for a request: an entrance that puts the Idempotency-Key step in front of `route` (the hot
 * route or the app) for a write under /v1 that carries the header, undefined for every other request, at the
 * cost of a method test and a header lookup. The front door (admission.ts) has read the body and admitted the key.
 */
export function idempotencyStep(deps: Deps, open: ReadonlySet<string>) {
  const answering = new Set<string>();

  async function serve(entry: Entry, key: string, path: string, route: Entrance): Promise<Response> {
    if (!VALID_KEY.test(key)) return refusals.badKey();
    const body = canonicalBody(entry.text ?? "");
    if (body === null) return route(entry);
    const auth = entry.auth!;
    const keyHash = hashOf("idempotency key", auth.orgId, key).toString("hex");
    const fingerprint = createHash("sha256").update(`${auth.key.id}\n${entry.request.method}\n${path}\n${body}`).digest("hex");
    if (answering.has(keyHash)) return refusals.inFlight();
    answering.add(keyHash);
    try {
      return await once(entry, { keyHash, fingerprint, claimed: false }, hashOf("idempotent answer", auth.orgId, key), route);
    } finally {
      answering.delete(keyHash);
    }
  }

  /** The recorded answer, a refusal, or the request run with its key claimed (and its 2xx answer stored). */
  async function once(entry: Entry, claim: IdempotencyClaim, secret: Buffer, route: Entrance): Promise<Response> {
    const { orgId, actor } = entry.auth!;
    const record = await deps.store.idempotency.find(orgId, claim.keyHash, entry.now - IDEMPOTENCY_WINDOW_MS);
    if (record && record.fingerprint !== claim.fingerprint) return refusals.otherRequest();
    if (record?.response) {
      const body = unseal(secret, claim.keyHash, record.response);
      // A stored empty answer (a DELETE's) is replayed as it was first sent: no body, no content type.
      const headers = body.length ? { ...JSON_TYPE, [REPLAYED_HEADER]: "true" } : { [REPLAYED_HEADER]: "true" };
      return new Response(body.length ? body : null, { status: record.response.status, headers });
    }
    if (record) return refusals.lostAnswer();
    const response = await route({ ...entry, auth: { ...entry.auth!, actor: { ...actor, idempotency: claim } } });
    if (response.status < 200 || response.status >= 300) return response;
    const answer = { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
    try {
      await deps.store.idempotency.complete(orgId, claim, { status: answer.status, body: seal(secret, claim.keyHash, answer) }, deps.clock.now());
    } catch (error) {
      // The change is made and its answer due: a retry finds the key without an answer (409), never a second change.
      deps.log.error("storing the answer of an idempotent request failed", { error: String(error) });
    }
    return new Response(answer.body.length ? answer.body : null, { status: answer.status, headers: response.headers });
  }

  return (request: Request, path: string, route: Entrance): Entrance | undefined => {
    if (!takesIdempotencyKey(request.method) || !request.headers.has(IDEMPOTENCY_HEADER)) return undefined;
    if (!isGated(path, open)) return undefined;
    const key = request.headers.get(IDEMPOTENCY_HEADER)!;
    return (entry) => serve(entry, key, path, route);
  };
}
