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

/** The field of a timed message that carries its publish time, in µs since the epoch, 16 digits until 2286. */
export const SENT_FIELD = "sent_us";
const SENT_DIGITS = 16;

/** The message of the paced runs: the same 1 KiB, with `data.sent_us` first; the publisher writes the 16 digits
 * between `prefix` and `suffix`, and the receivers find them in the delivery without parsing its JSON. */
export function timedBody(): { prefix: string; suffix: string } {
  const make = (note: string) => JSON.stringify({ name: "order.created", data: { [SENT_FIELD]: 10 ** (SENT_DIGITS - 1), ...order(note) } });
  const bare = make("");
  const text = make("x".repeat(Math.max(0, BODY_BYTES - bare.length)));
  const at = text.indexOf(`"${SENT_FIELD}":`) + SENT_FIELD.length + 3;
  if (text.length !== Math.max(BODY_BYTES, bare.length) || !/^\d{16}[,}]/.test(text.slice(at))) throw new Error("timed payload drifted");
  return { prefix: text.slice(0, at), suffix: text.slice(at + SENT_DIGITS) };
}

/** What a listener receives for that message, for the bare-fetch baseline to send the same bytes. */
export function deliveryBody(id: string): string {
  const { name, data } = JSON.parse(messageBody());
  return JSON.stringify({ id, name, queue: { id: "q_00000000000000000000", name: "bench" }, data, created_at: Date.now() });
}

/** A wall clock with sub-millisecond resolution that two processes on one machine agree on (unlike hrtime,
 * which Bun counts from process start). */
export const wallMs = () => performance.timeOrigin + performance.now();
