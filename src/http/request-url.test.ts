import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdressed, requestOrigin, splitUrl, wantsPretty } from "./request-url.ts";
import { waitFor } from "../../test/support/wait.ts";

// The URLs a real Bun server hands its fetch handler, for requests sent as raw text (no client normalizes them).
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => new Response(r.url) });
});
afterAll(() => server.stop(true));

async function received(path: string, host: string): Promise<string> {
  const chunks: string[] = [];
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => (closed = resolve));
  const socket = await Bun.connect({ hostname: "127.0.0.1", port: server.port!, socket: { data(_s, d) { chunks.push(Buffer.from(d).toString()); }, close: () => closed() } });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  await waitFor(ended, 10_000, () => `no answer for ${path}`); // Connection: close: the server ends it after the answer
  const text = chunks.join("");
  const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? -1);
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  if (length < 0 || body.length < length) throw new Error(`no whole answer for ${path}: ${text}`);
  return body.slice(0, length);
}

const PATHS = ["/v1/queues", "/healthz/../v1/queues", "/v1/./queues", "/v1/%2e%2e/x", "/v1/queues?pretty=1", "//v1/queues", "/v1/q%20x?a=b&pretty", "/"];
const HOSTS = ["127.0.0.1", "EXAMPLE.com:80", "[0:0::1]:80", "Ex.com:8080"];

test("origin and path are what the URL parser finds, for the URLs Bun hands the server", async () => {
  let compared = 0;
  for (const host of HOSTS) {
    for (const path of PATHS) {
      const url = await received(path, host);
      const parsed = new URL(url);
      expect(splitUrl(url)).toEqual({ origin: parsed.origin, path: parsed.pathname, search: parsed.search });
      compared++;
    }
  }
  expect(compared).toBe(HOSTS.length * PATHS.length);
});

test("a Host Bun cannot use leaves a relative URL: no origin, the path intact", async () => {
  const url = await received("/v1/queues?x=1", "bücher.de");
  expect(splitUrl(url)).toEqual({ origin: "", path: "/v1/queues", search: "?x=1" });
});

test("pretty is asked by name, empty, true or 1", () => {
  for (const search of ["?pretty", "?pretty=", "?pretty=true", "?a=1&pretty=1"]) expect(wantsPretty(search)).toBe(true);
  for (const search of ["", "?pretty=false", "?pretty=0", "?prettyish=1", "?a=pretty"]) expect(wantsPretty(search)).toBe(false);
});

test("a short origin is routed under a marked host that copies of the request keep, and links get the real one", () => {
  for (const [origin, expected] of [["https://x", "https://x"], ["http://a:1", "http://a:1"], ["http://abc", "http://abc"], ["https://localhost", "https://localhost"]]) {
    const routed = readdressed(new Request(`${origin}/queues`, { method: "POST", body: "{}" }), origin, "/v1/queues?a=1");
    // Elysia's router takes the path from the first "/" at or after index 11.
    expect(routed.url.slice(routed.url.indexOf("/", 11))).toBe("/v1/queues?a=1");
    expect(splitUrl(routed.url).path).toBe("/v1/queues");
    const copy = new Request(routed.url, { method: routed.method, headers: routed.headers, body: "{}" });
    expect([requestOrigin(routed), requestOrigin(copy)]).toEqual([expected!, expected!]);
  }
});
