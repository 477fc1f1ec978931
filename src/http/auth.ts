/**
 * X-API-KEY → organization and scopes. The secret is hashed (SHA-256) and the hash looked up; the secret itself
 * is never compared, stored or logged. Unknown, disabled or missing keys are all 401 alike. A portal session's
 * token (`fop_…`, docs/portal.md) is looked up the same way and stands for a credential limited to its listeners
 * (scopes.ts); an expired or revoked one is 401, and counts toward the lockout like an unknown key.
 *
 * The gate in front of every API request (step 3 of the front door, admission.ts), in this order:
 * 1. a locked client address gets 403 with Retry-After, whatever key it sends, so a guesser learns nothing
 *    more once locked;
 * 2. authentication: a 401 counts one failure against the client address;
 * 3. the rate limit of the authenticated key: its headers go on every response, 429 with Retry-After past it.
 */
import type { Actor, Store } from "../store/index.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../lib/log.ts";
import { PORTAL_TOKEN_PREFIX, sha256Hex } from "../lib/ids.ts";
import { portalCredential, type Credential } from "./scopes.ts";
import { AppError, forbidden, unauthorized } from "../lib/errors.ts";
import { clientAddress, createLockout, createSharedLockout } from "./lockout.ts";
import { createRateLimiter, rateLimitHeaders, retryAfterSeconds } from "./rate-limit.ts";

export type Auth = { orgId: string; key: Credential; actor: Actor };

export async function authenticate(store: Store, header: string | null, now: number): Promise<Auth> {
  if (!header) throw unauthorized("The X-API-KEY header is missing.");
  if (header.startsWith(PORTAL_TOKEN_PREFIX)) return authenticatePortal(store, header, now);
  const key = await store.apiKeys.authenticate(sha256Hex(header));
  if (!key || key.status !== "enabled") throw unauthorized("The API key is unknown or disabled.");
  return { orgId: key.orgId, key, actor: { keyId: key.id, keyName: key.name } };
}

/** A session's token works from its creation until `expiresAt` (exclusive) unless revoked before. */
async function authenticatePortal(store: Store, token: string, now: number): Promise<Auth> {
  const session = await store.portalSessions.authenticate(sha256Hex(token));
  if (!session || session.revokedAt !== null || session.expiresAt <= now) throw unauthorized("The portal link is unknown, expired or revoked.");
  return { orgId: session.orgId, key: portalCredential(session), actor: { keyId: session.id, keyName: "portal session", portalSession: session.id } };
}

export type Admitted = { auth: Auth; headers: Record<string, string> };

export interface Gate {
  /**
   * Admits one request or throws its 401, 403 or 429; `headers` (rate limit) belong on whatever answers it.
   * `peer` is asked only when the address matters: some address is locked, or this request fails.
   */
  admit(request: Request, peer: () => string | null, now: number): Promise<Admitted>;
}

type GateDeps = { store: Store; config: Pick<Config, "rateLimit" | "lockout" | "trustProxy">; log: Logger };

/**
 * One gate per app, shared by every route. Rate-limit counters are in this process's memory (with several
 * instances, each counts its own requests); lockout counts are the store's when it keeps them for every instance.
 */
export function createGate({ store, config, log }: GateDeps): Gate {
  const lockout = store.lockouts ? createSharedLockout(store.lockouts, config.lockout, log) : createLockout(config.lockout);
  const limiter = config.rateLimit > 0 ? createRateLimiter({ limit: config.rateLimit }) : null;

  async function authenticateFrom(address: () => string, request: Request, now: number): Promise<Auth> {
    try {
      return await authenticate(store, request.headers.get("x-api-key"), now);
    } catch (e) {
      if (e instanceof AppError && e.status === 401) {
        const until = await lockout.fail(address(), now);
        if (until) log.warn("client address locked out after failed authentications", { address: address(), until: new Date(until).toISOString() });
      }
      throw e;
    }
  }

  return {
    async admit(request, peer, now) {
      const address = () => clientAddress(peer(), request.headers.get("x-forwarded-for"), config.trustProxy);
      // Finding the address (the socket's, then parsed) cost µs on every request; with no lock anywhere it cannot be locked.
      const lockedUntil = lockout.hasLocks() ? lockout.lockedUntil(address(), now) : 0;
      if (lockedUntil) {
        throw forbidden("Too many failed authentications from this address; try again later.", { "retry-after": retryAfterSeconds(lockedUntil, now) });
      }
      const auth = await authenticateFrom(address, request, now);
      if (!limiter) return { auth, headers: {} };
      const decision = limiter.take(auth.key.id, now);
      const headers = rateLimitHeaders(decision);
      if (!decision.allowed) {
        throw new AppError(429, "The rate limit of this API key is exhausted for this minute.", undefined, {
          ...headers,
          "retry-after": retryAfterSeconds(decision.resetAt, now),
        });
      }
      return { auth, headers };
    },
  };
}
