/**
 * GET /readyz (no key, no version prefix): 200 `{"status":"ready"}` while the database accepts writes,
 * else 503 `{"status":"unavailable","detail":…}` with Retry-After, so a load balancer or an orchestrator takes the
 * instance out of rotation while its disk is full and back once it can write. /healthz stays the liveness check.
 *
 * Whether the database accepts writes is learnt by writing: store.checkWritable rewrites one row, inside the
 * group commit's next batch. The answer is kept for READY_FOR_MS and requests meanwhile share it, so probes every
 * few seconds cost one tiny write each, and a flood of them (the path needs no key) at most one write a second.
 */
import { Elysia, t } from "elysia";
import { AppError } from "../lib/errors.ts";
import type { Deps } from "./context.ts";

export const READY_PATH = "/readyz";
export const READY_FOR_MS = 1_000;
const RETRY_AFTER = "5";

export type Readiness = { ready: true } | { ready: false; detail: string };

const ReadyModel = t.Object({ status: t.Literal("ready") }, { description: "The database accepts writes." });
const UnavailableModel = t.Object(
  { status: t.Literal("unavailable"), detail: t.String({ description: "why, in one sentence" }) },
  { description: "The database does not accept writes now (a full disk, a read-only file system), or the service is shutting down." },
);

/** The readiness answer, learnt at most once per `forMs` however many ask (the module comment). */
export function readinessCheck(deps: Pick<Deps, "store" | "clock" | "log">, forMs = READY_FOR_MS): () => Promise<Readiness> {
  let last: { at: number; answer: Readiness } | null = null;
  let asking: Promise<Readiness> | null = null;
  const ask = async (): Promise<Readiness> => {
    try {
      await deps.store.checkWritable(deps.clock.now());
      return { ready: true };
    } catch (error) {
      if (error instanceof AppError && error.detail) return { ready: false, detail: error.detail };
      deps.log.error("readiness check failed", { error: String(error) });
      return { ready: false, detail: "The database did not accept a write." };
    }
  };
  return () => {
    if (last && deps.clock.now() - last.at < forMs) return Promise.resolve(last.answer);
    asking ??= ask().then((answer) => {
      last = { at: deps.clock.now(), answer };
      asking = null;
      return answer;
    });
    return asking;
  };
}

/** The 503 of /readyz, also answered by the server while it shuts down (server.ts). */
export function notReady(detail: string): Response {
  return Response.json({ status: "unavailable", detail }, { status: 503, headers: { "retry-after": RETRY_AFTER } });
}

export function readinessRoute(deps: Deps) {
  const ready = readinessCheck(deps);
  return new Elysia().get(
    READY_PATH,
    async ({ set }) => {
      const answer = await ready();
      if (answer.ready) return { status: "ready" as const };
      set.status = 503;
      set.headers["retry-after"] = RETRY_AFTER;
      return { status: "unavailable" as const, detail: answer.detail };
    },
    {
      response: { 200: ReadyModel, 503: UnavailableModel },
      detail: {
        summary: "Readiness: whether the service accepts writes now (no key, no version prefix)",
        description: "Checked with one tiny write, at most once a second; the answer is shared meanwhile.",
        tags: ["service"],
      },
    },
  );
}
