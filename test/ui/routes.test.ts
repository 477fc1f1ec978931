/**
 * The dashboard's files over HTTP, from source and from the compiled binary (whose files are embedded at build
 * time): the page and its files under /ui/ without a key, a strict Content-Security-Policy on every answer,
 * app routes answered with the page, missing files 404, /ui redirected to /ui/, the API unchanged beside it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { $ } from "bun";
import { PROTOS, ROOT, startFanout, tempDir, type Fanout } from "../e2e/harness.ts";

const HTML = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

async function binaryCopy(): Promise<string> {
  const built = join(ROOT, "dist/fanout");
  // `npm test` builds first; a direct `bun test` builds here so the test never runs a missing binary.
  if (!existsSync(built)) await $`${process.execPath} ${join(ROOT, "scripts/build.ts")}`.cwd(ROOT).quiet();
  const binary = join(tempDir("fanout-ui-bin-"), "fanout");
  copyFileSync(built, binary);
  return binary;
}

/** fetch with the server's self-signed certificate accepted; Bun's fetch undoes gzip itself. */
const get = (fanout: Fanout, path: string, headers: Record<string, string> = {}, method = "GET") =>
  fetch(`${fanout.url}${path}`, { method, headers, redirect: "manual", tls: { rejectUnauthorized: false } });

function expectStrictPolicy(headers: Headers) {
  const policy = headers.get("content-security-policy") ?? "";
  for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"]) {
    expect(policy).toContain(directive);
  }
  expect(policy).not.toContain("unsafe-inline");
  expect(policy).not.toContain("unsafe-eval");
  expect(headers.get("x-content-type-options")).toBe("nosniff");
  expect(headers.get("x-frame-options")).toBe("DENY");
  expect(headers.get("referrer-policy")).toBe("no-referrer");
}

for (const mode of ["source", "binary"] as const) {
  describe(`the dashboard's files, served from ${mode}`, () => {
    let fanout: Fanout;
    beforeAll(async () => {
      fanout = await startFanout(mode === "binary" ? { binary: await binaryCopy() } : {});
    }, 120_000);
    afterAll(async () => void (await fanout?.stop()));

    test("the page and every file it names are served without a key, under a strict policy, over HTTP/1.1 and HTTP/2", async () => {
      for (const proto of PROTOS) {
        const page = await fanout.call(proto, "GET", "/ui/", { key: null, headers: HTML });
        expect(page.status).toBe(200);
        expect(page.headers.get("content-type")).toStartWith("text/html");
        expect(page.headers.get("cache-control")).toBe("no-cache");
        expectStrictPolicy(page.headers);
        // No inline script or style: everything the page runs or applies is a file the policy allows.
        expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
        expect(page.text).not.toMatch(/<style|\sstyle=/);
        const files = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
        expect(files.some((f) => f.endsWith(".js"))).toBe(true);
        expect(files.some((f) => f.endsWith(".css"))).toBe(true);
        for (const file of files) {
          expect(file).toMatch(/^\/ui\/[\w.-]+$/);
          const got = await fanout.call(proto, "GET", file, { key: null, headers: { accept: "*/*" } });
          expect({ file, status: got.status }).toEqual({ file, status: 200 });
          expect(got.headers.get("cache-control")).toContain("immutable");
          expectStrictPolicy(got.headers);
        }
      }
    });

    test("files are sent compressed to a client that accepts gzip, and revalidate with their entity tag", async () => {
      const page = await (await get(fanout, "/ui/")).text();
      const script = page.match(/src="(\/ui\/[^"]+\.js)"/)![1]!;
      const plain = await get(fanout, script, { "accept-encoding": "identity" });
      const zipped = await get(fanout, script, { "accept-encoding": "gzip" });
      expect(zipped.headers.get("content-encoding")).toBe("gzip");
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(await zipped.text()).toBe(await plain.text());
      expect(zipped.headers.get("etag")).not.toBe(plain.headers.get("etag"));
      const again = await get(fanout, script, { "accept-encoding": "identity", "if-none-match": plain.headers.get("etag")! });
      expect(again.status).toBe(304);
    });

    test("paths of the app's views get the page; a missing file is 404; /ui redirects to /ui/", async () => {
      const page = await (await get(fanout, "/ui/")).text();
      for (const path of ["/ui/queues", "/ui/queues/q_1/messages/m_2", "/ui/events?x=1"]) {
        const got = await get(fanout, path);
        expect({ path, status: got.status }).toEqual({ path, status: 200 });
        expect(await got.text()).toBe(page);
      }
      const missing = await get(fanout, "/ui/chunk-gone.js");
      expect(missing.status).toBe(404);
      expectStrictPolicy(missing.headers);
      const redirect = await get(fanout, "/ui?next=1");
      expect(redirect.status).toBe(308);
      expect(redirect.headers.get("location")).toBe("/ui/?next=1");
    });

    test("a portal's page is the dashboard's page, sent without X-Frame-Options and framed by nobody without a session", async () => {
      const page = await (await get(fanout, "/ui/")).text();
      const portal = await get(fanout, "/portal/ps_none");
      expect(portal.status).toBe(200);
      expect(await portal.text()).toBe(page);
      expect(portal.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(portal.headers.get("x-frame-options")).toBeNull();
    });

    test("only GET and HEAD are answered; the API beside the dashboard is unchanged", async () => {
      const posted = await get(fanout, "/ui/", { "content-type": "application/json" }, "POST");
      expect(posted.status).toBe(405);
      expect(posted.headers.get("allow")).toBe("GET, HEAD");
      expect(((await posted.json()) as { title: string }).title).toBe("Method Not Allowed");
      const head = await get(fanout, "/ui/", {}, "HEAD");
      expect(head.status).toBe(200);
      expect(await head.text()).toBe("");
      expect((await fanout.call("h1", "GET", "/v1/queues", { key: null })).status).toBe(401);
      expect((await fanout.call("h2", "GET", "/v1/queues")).status).toBe(200);
      expect((await fanout.call("h1", "GET", "/uix", { key: null })).status).toBe(401);
    });
  });
}
