/**
 * A Host header Bun cannot make a URL of leaves request.url relative, which routing and links cannot use. Such a
 * request gets a JSON 400 on every path, before routing; it used to fail inside the URL parser with 500.
 */
import { afterAll, expect, test } from "bun:test";
import https from "node:https";
import { startFanout, type Fanout } from "./harness.ts";

let fanout: Fanout | undefined;
afterAll(async () => fanout?.stop());

function call(f: Fanout, method: string, path: string, host: string, body?: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host, "x-api-key": f.key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = https.request(`${f.url}${path}`, { method, headers, rejectUnauthorized: false, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("a Host Bun cannot use gets a JSON 400 on every path and changes nothing; a usable one is served", async () => {
  fanout = await startFanout();
  const bad = "bücher.de";
  const refused = [
    await call(fanout, "POST", "/v1/queues", bad, JSON.stringify({ name: "q" })),
    await call(fanout, "GET", "/queues?per_page=1", bad),
    await call(fanout, "GET", "/v1/events?limit=1", bad),
    await call(fanout, "GET", "/healthz", bad),
  ];
  for (const reply of refused) expect(reply).toEqual({ status: 400, body: { title: "Bad Request", status: 400, detail: "The Host header is not a usable host name." } });
  const listed = await call(fanout, "GET", "/v1/queues", "localhost");
  expect([listed.status, listed.body.queues]).toEqual([200, []]);
  expect(listed.body._links.self.href.startsWith("https://localhost")).toBe(true);
});
