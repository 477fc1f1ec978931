/**
 * Where a message's delivery to a listener stands, as both lists of deliveries show it: a message's (one per
 * listener) and a listener's (one per message). Each adds whom the delivery is to or of.
 */
import { t } from "elysia";
import type { DeliveryProgress } from "../store/index.ts";
import { Nullable } from "./shared-model.ts";

export const DeliveryProgressFields = {
  state: t.Union([t.Literal("pending"), t.Literal("sending"), t.Literal("acknowledged"), t.Literal("missed")]),
  attempts: t.Integer({ description: "attempts made in this cycle so far" }),
  next_attempt_at: Nullable(t.Integer({ description: "epoch ms" })),
  last_status: Nullable(t.Integer({ description: "HTTP status of the last attempt" })),
  last_error: Nullable(t.String({ description: "why the last attempt failed without a status" })),
  cycle: t.Integer({ description: "1 for the publish's delivery; each redelivery or replay starts the next, with a fresh retry schedule" }),
};

export const deliveryProgressView = (d: DeliveryProgress) => ({
  state: d.state,
  attempts: d.attempts,
  next_attempt_at: d.nextAttemptAt,
  last_status: d.lastStatus,
  last_error: d.lastError,
  cycle: d.cycle,
});
