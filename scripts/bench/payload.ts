/**
 * The message every ingest run publishes: about 1 KiB of JSON shaped like a real order event (nested objects,
 * an array, numbers and strings), so the parse cost is that of ordinary data rather than one long string.
 */
export const BODY_BYTES = 1024;

function order(note: string) {
  return {
    order_id: 918273645,
    created: "2025-01-01T12:00:00.000Z",
    customer: { id: "cus_8f3a2b1c9d", email: "ada.lovelace@example.com", name: "Ada Lovelace", tier: "gold" },
    shipping: { street: "12 Analytical Engine Way", city: "London", postcode: "NW1 6XE", country: "GB" },
    items: [
      { sku: "SKU-000123", title: "Difference engine gear", quantity: 3, unit_price: 19.99 },
      { sku: "SKU-000456", title: "Punched card pack (500)", quantity: 1, unit_price: 42.5 },
      { sku: "SKU-000789", title: "Brass crank handle", quantity: 2, unit_price: 7.25 },
    ],
    totals: { net: 116.47, tax: 23.29, gross: 139.76, currency: "GBP" },
    flags: ["gift", "express"],
    note,
  };
}

/** `{"name":…,"data":{…}}` padded through `data.note` to exactly BODY_BYTES bytes. */
export function messageBody(): string {
  const bare = JSON.stringify({ name: "order.created", data: order("") });
  const pad = Math.max(0, BODY_BYTES - bare.length);
  const text = JSON.stringify({ name: "order.created", data: order("x".repeat(pad)) });
  if (text.length !== Math.max(BODY_BYTES, bare.length)) throw new Error("payload size drifted");
  return text;
}

/** What a listener receives for that message, for the bare-fetch baseline to send the same bytes. */
export function deliveryBody(id: string): string {
  const { name, data } = JSON.parse(messageBody());
  return JSON.stringify({ id, name, queue: { id: "q_00000000000000000000", name: "bench" }, data, created_at: Date.now() });
}

/** A wall clock with sub-millisecond resolution that two processes on one machine agree on (unlike hrtime,
 * which Bun counts from process start). */
export const wallMs = () => performance.timeOrigin + performance.now();
