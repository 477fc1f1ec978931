/**
 * The send path for HTTPS targets whose host is an IP literal (plain HTTP has its own, socket-send.ts): Bun's
 * fetch instead of node:http, which in Bun costs about three times the CPU of fetch per request (90-105 against
 * 29-31 µs per 1 KiB POST to a local receiver, measured).
 * The SSRF pin holds: a name is replaced in the URL by the address that was checked, and goes on as the Host
 * header, so the connection cannot reach anything else. HTTPS to a name keeps node:http (egress.ts): there the
 * TLS handshake must carry the name (SNI, certificate) while the socket goes to the checked address.
 * Same contract as the node:http path: no redirects followed, at most 1 KiB of the body read (the connection is
 * dropped past it), errors passed on with their codes (ECONNREFUSED, ECONNRESET), a handle the watchdog aborts.
 */
import type { SendRequest, Target } from "./egress.ts";

/** What either send path reports of a response. */
export type ResponseHead = { status: number; retryAfter: string | null; bodySnippet: string };

/** The most of a response body either send path reads. */
export const SNIPPET_BYTES = 1024;

/** The caller's headers without those the transport sets itself (`except`, lower case). */
export function headersExcept(headers: Record<string, string>, except: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (!except.includes(name.toLowerCase())) out[name] = value;
  return out;
}

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

/** The URL with its host replaced by the checked address, and the Host header it had; literals are left as they are. */
function pinned(url: string, target: Extract<Target, { ok: true }>): { url: string; host?: string } {
  if (target.literal) return { url };
  const u = new URL(url);
  const address = target.family === 6 ? `[${target.address}]` : target.address;
  return { url: `${u.protocol}//${address}${u.port ? `:${u.port}` : ""}${u.pathname}${u.search}`, host: u.host };
}

export function fetchRequest(
  req: SendRequest,
  target: Extract<Target, { ok: true }>,
  onDone: (r: ResponseHead) => void,
  onError: (e: unknown) => void,
): { destroy(): void } {
  const controller = new AbortController();
  const method = req.method ?? "POST";
  const { url, host } = pinned(req.url, target);
  const headers = headersExcept(req.headers, ["content-length", "host"]);
  if (host) headers.host = host;
  fetch(url, {
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
