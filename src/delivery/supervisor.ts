// PLACEHOLDER until the delivery worker lands (issue 3): the owner of src/delivery replaces this whole file.
import type { Config } from "../config.ts";
import type { Logger } from "../lib/log.ts";
export type DeliveryOptions = { dbPath: string; config: Config; log: Logger; version: string };
export type DeliveryHandle = { nudge(): void; stop(): Promise<void> };
export function startDelivery(_options: DeliveryOptions): DeliveryHandle {
  return { nudge() {}, async stop() {} };
}
