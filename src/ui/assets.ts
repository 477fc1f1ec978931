/**
 * The dashboard's files, ready to serve: the bundle that `bun build --compile` made of client/index.html and
 * embedded in the binary (the HTML import's `files`), or, when running from source where that import carries
 * no files, the same bundle made once by Bun.build on first use. The page's script and stylesheet references
 * are rewritten to /ui/<file>, so every file is served under /ui/ whatever the bundler named them.
 */
import { basename } from "node:path";
import type { HTMLBundle } from "bun";

/** `gzip` is the body compressed once at load, for clients that accept it (text files only). */
export type Asset = { body: Uint8Array<ArrayBuffer>; type: string; etag: string; gzip?: Uint8Array<ArrayBuffer> };
export type Assets = { index: Asset; files: Map<string, Asset> };
type Output = { name: string; type: string; bytes: () => Promise<Uint8Array<ArrayBuffer>> };

function asset(body: Uint8Array<ArrayBuffer>, type: string): Asset {
  const gzip = /^(text\/|image\/svg)/.test(type) && body.length > 1024 ? Bun.gzipSync(body, { level: 9 }) : undefined;
  return { body, type, etag: `"${Bun.hash(body).toString(36)}"`, gzip };
}

async function embedded(bundle: HTMLBundle): Promise<Output[] | null> {
  if (!bundle.files?.length) return null;
  return bundle.files.map((f) => ({ name: basename(f.path), type: f.headers["content-type"], bytes: () => Bun.file(f.path).bytes() }));
}

async function built(index: string): Promise<Output[]> {
  const result = await Bun.build({ entrypoints: [index], minify: true, target: "browser" });
  if (!result.success) throw new AggregateError(result.logs, "the dashboard did not build");
  return result.outputs.map((o) => ({ name: basename(o.path), type: o.type, bytes: async () => new Uint8Array(await o.arrayBuffer()) }));
}

/** Points the page's `<script src>` and `<link href>` at /ui/<file>, and drops `crossorigin` (all is same-origin). */
async function rewritePage(html: Uint8Array<ArrayBuffer>, names: Set<string>): Promise<Uint8Array<ArrayBuffer>> {
  const point = (attribute: string) => ({
    element(el: HTMLRewriterTypes.Element) {
      const ref = el.getAttribute(attribute);
      if (ref && names.has(basename(ref))) el.setAttribute(attribute, `/ui/${basename(ref)}`);
      el.removeAttribute("crossorigin");
    },
  });
  const rewriter = new HTMLRewriter().on("script[src]", point("src")).on("link[href]", point("href"));
  return new Uint8Array(await rewriter.transform(new Response(html)).arrayBuffer());
}

export async function loadAssets(bundle: HTMLBundle): Promise<Assets> {
  const outputs = (await embedded(bundle)) ?? (await built(bundle.index));
  const page = outputs.find((o) => o.name.endsWith(".html"));
  if (!page) throw new Error("the dashboard bundle has no page");
  const files = new Map<string, Asset>();
  for (const o of outputs) {
    if (o === page) continue;
    files.set(o.name, asset(await o.bytes(), o.type));
  }
  const body = await rewritePage(await page.bytes(), new Set(files.keys()));
  return { index: asset(body, "text/html;charset=utf-8"), files };
}
