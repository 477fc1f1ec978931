/**
 * `npm run release`: one executable per supported platform in dist/release and a SHA256SUMS beside them that
 * `cd dist/release && sha256sum -c SHA256SUMS` verifies. Cross-compiling needs no toolchain: Bun fetches each
 * foreign target's runtime from the npm registry (and caches it).
 *   --host-only       build only this machine's target (offline; the release test uses it)
 *   --out <dir>       write there instead of dist/release (emptied first, like dist/release)
 *   --commit <label>  the commit the binaries name, for a tree without git (a source tarball); else git's
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { compile } from "./compile.ts";

/** Release targets: `bun-<os>-<arch>` and the file it becomes. */
export const TARGETS = [
  { os: "linux", arch: "x64", file: "fanout-linux-x64" },
  { os: "linux", arch: "arm64", file: "fanout-linux-arm64" },
  { os: "darwin", arch: "x64", file: "fanout-darwin-x64" },
  { os: "darwin", arch: "arm64", file: "fanout-darwin-arm64" },
  { os: "windows", arch: "x64", file: "fanout-windows-x64.exe" },
];

const HOST_OS = process.platform === "win32" ? "windows" : process.platform;

async function sha256(file: string): Promise<string> {
  return new Bun.CryptoHasher("sha256").update(await Bun.file(file).bytes()).digest("hex");
}

const { values } = parseArgs({ options: { "host-only": { type: "boolean" }, out: { type: "string" }, commit: { type: "string" } } });
const out = resolve(values.out ?? join(import.meta.dir, "..", "dist/release"));
const targets = values["host-only"] ? TARGETS.filter((t) => t.os === HOST_OS && t.arch === process.arch) : TARGETS;
if (targets.length === 0) throw new Error(`no release target for this machine (${HOST_OS}-${process.arch})`);

const started = performance.now();
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const sums: string[] = [];
for (const { os, arch, file } of targets) {
  const began = performance.now();
  const path = join(out, file);
  const commit = await compile(path, { target: `bun-${os}-${arch}`, commit: values.commit });
  // Two spaces: sha256sum's text-mode line, which `sha256sum -c` reads on every platform.
  sums.push(`${await sha256(path)}  ${basename(path)}`);
  const mib = (Bun.file(path).size / 1048576).toFixed(1);
  console.log(`built ${file} (${commit}, ${mib} MiB) in ${Math.round(performance.now() - began)} ms`);
}
writeFileSync(join(out, "SHA256SUMS"), `${sums.join("\n")}\n`);
console.log(`${targets.map((t) => t.file).join(", ")} and SHA256SUMS in ${out} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
