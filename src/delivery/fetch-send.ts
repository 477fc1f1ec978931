/**
 * The send path for a target whose host is an IP literal: Bun's fetch instead of node:http. With no name to
 * resolve there is no lookup to pin, and node:http in Bun costs about three times the CPU of fetch per request
 * (90-105 against 29-31 µs per 1 KiB POST to a local receiver, measured), which was most of the delivery
 * worker's time. Names keep node:http (egress.ts): only it lets the connection go to the address that was
 * checked while TLS and Host stay on the name.
 * Same contract as the node:http path: no redirects followed, at most 1 KiB of the body read (the connection is
 * dropped past it), errors passed on with their codes (ECONNREFUSED, ECONNRESET), a handle the watchdog aborts.
 */
import type { SendRequest } from "./egress.ts";

export type FetchResponse = { status: number; retryAfter: string | null; bodySnippet: string };

const SNIPPET_BYTES = 1024;

async function snippetOf(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    // Draining a huge or endless body would hold a concurrency slot; losing the keep-alive socket is cheaper.
    if (size > SNIPPET_BYTES) {
      await reader.cancel();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString("utf8");
}

export function fetchRequest(req: SendRequest, onDone: (r: FetchResponse) => void, onError: (e: unknown) => void): { destroy(): void } {
  const controller = new AbortController();
  const method = req.method ?? "POST";
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (name.toLowerCase() !== "content-length") headers[name] = value;
  fetch(req.url, {
    method,
    headers,
    body: method === "POST" ? req.body : undefined,
    redirect: "manual",
    signal: controller.signal,
    ...(req.insecureTls ? { tls: { rejectUnauthorized: false } } : {}),
  }).then(
    async (res) => onDone({ status: res.status, retryAfter: res.headers.get("retry-after"), bodySnippet: await snippetOf(res) }),
    onError,
  ).catch(onError);
  return { destroy: () => controller.abort() };
}
