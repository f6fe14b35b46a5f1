// Bundle the agent: dist/machined.cjs (everything, one CommonJS file, ASCII only), dist/machined.mjs (the
// launcher node runs: it compiles the bundle with V8's code cache) and dist/machined.cjs.cache (that cache,
// written by a warm-up start). Start-up work the first maintenance call does not need is deferred: the
// protobuf descriptors are decoded on first use (scripts/lazy-descriptors.ts). docs/performance.md has the
// figures. `node scripts/build.mjs [--outdir DIR] [--no-cache]`.
import { build } from "esbuild";
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TOP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const outdir = path.resolve(args.includes("--outdir") ? args[args.indexOf("--outdir") + 1] : path.join(TOP, "dist"));
const withCache = !args.includes("--no-cache");
const LAZY = path.join(TOP, "scripts/lazy-descriptors.ts");

/**
 * The generated `*_pb.ts` modules build every descriptor at import (`fileDesc(...)`, `messageDesc(...)`, ...):
 * here each of those calls is wrapped so it runs on first use instead (see lazy-descriptors.ts).
 */
const lazyDescriptors = {
  name: "lazy-descriptors",
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]machinery[\\/]api[\\/]gen[\\/].*_pb\.ts$/ }, async (a) => {
      const src = await readFile(a.path, "utf8");
      let wrapped = 0;
      const contents = src.replace(
        /= \/\*@__PURE__\*\/\n {2}(fileDesc|messageDesc|enumDesc|serviceDesc|extDesc)\(([^;]*?)\);\n/g,
        (_m, fn, callArgs) => {
          wrapped++;
          return `= /*@__PURE__*/\n  __lazyDescriptor(() => ${fn}(${callArgs}));\n`;
        },
      );
      // A generated file in another shape would silently stay eager; say so instead.
      const declared = (src.match(/= \/\*@__PURE__\*\/\n/g) ?? []).length;
      if (wrapped !== declared || wrapped === 0) {
        throw new Error(`lazy-descriptors: ${path.relative(TOP, a.path)}: wrapped ${wrapped} of ${declared} descriptor declarations`);
      }
      return { contents: `import { lazyDescriptor as __lazyDescriptor } from ${JSON.stringify(LAZY)};\n${contents}`, loader: "ts" };
    });
  },
};

const started = performance.now();
mkdirSync(outdir, { recursive: true });
const bundle = path.join(outdir, "machined.cjs");
const launcher = path.join(outdir, "machined.mjs");
const cache = `${bundle}.cache`;
rmSync(cache, { force: true });
const result = await build({
  entryPoints: [path.join(TOP, "src/main.ts")],
  outfile: bundle,
  bundle: true,
  platform: "node",
  target: "node20",
  // CommonJS so the launcher can compile it with vm.Script and a code cache (Node 20 has none for ESM).
  format: "cjs",
  // ASCII only: V8 keeps a source with one non-ASCII character as UTF-16 (twice the memory, slower to scan).
  charset: "ascii",
  // Our sources are ES modules: keep them strict, as they were in the ESM bundle.
  banner: { js: '"use strict";' },
  // The one import.meta use (locating koffi) gets the launcher's URL, which the launcher passes in.
  define: { "import.meta.url": "__machined_url" },
  sourcemap: "linked",
  metafile: true,
  external: ["koffi"],
  plugins: [lazyDescriptors],
  logLevel: "warning",
});
copyFileSync(path.join(TOP, "scripts/launcher.mjs"), launcher);
chmodSync(launcher, 0o755);
// esbuild escapes strings, template literals, regexps and identifiers but keeps comments as written: spell
// their few non-ASCII characters (arrows, dashes) as \u{...} too, which in any of those other places would
// also mean the same character.
const text = readFileSync(bundle, "utf8").replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
writeFileSync(bundle, text);
// The bill of materials the node reports (SBOMItems): the npm packages the bundle contains, plus koffi (kept
// external, shipped beside it). Read by src/host/sbom.ts from next to the bundle.
const own = JSON.parse(readFileSync(path.join(TOP, "package.json"), "utf8"));
const dirs = new Map([["koffi", path.join(TOP, "node_modules/koffi")]]);
for (const input of Object.keys(result.metafile.inputs)) {
  // The innermost node_modules/<pkg> of the path is the package the file belongs to (nested copies included).
  const m = [...input.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].pop();
  if (m) dirs.set(m[1], path.resolve(TOP, input.slice(0, m.index + m[0].length - 1)));
}
const packages = [...dirs].sort(([a], [b]) => a.localeCompare(b)).map(([name, dir]) => {
  const p = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
  const license = typeof p.license === "string" ? p.license : undefined;
  return { name, version: p.version, ...(license ? { license } : {}), purls: [`pkg:npm/${name.replace(/^@/, "%40")}@${p.version}`] };
});
writeFileSync(path.join(outdir, "sbom.json"), `${JSON.stringify({ machined: { name: own.name, version: own.version, license: own.license }, packages }, null, 2)}\n`);
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`built ${path.relative(process.cwd(), launcher)} + machined.cjs in ${Math.round(performance.now() - started)} ms (${(bytes / 1024).toFixed(0)} KiB with map)`);

if (withCache) {
  // Warm-up: a maintenance-mode start in a scratch folder; the launcher writes the cache once it has run
  // start-up, and then this process is stopped.
  const t0 = performance.now();
  const state = mkdtempSync(path.join(tmpdir(), "machined-warmup-"));
  const child = spawn(
    process.execPath,
    [launcher, "start", "--state-dir", state, "--listen", "127.0.0.1:0", "--services", "off", "--log-level", "warn"],
    { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, MACHINED_WRITE_CODE_CACHE: cache, MACHINED_WRITE_CODE_CACHE_AFTER_MS: "2000" } },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const deadline = Date.now() + 60_000;
  while (!existsSync(cache) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  child.kill("SIGKILL");
  await exited;
  rmSync(state, { recursive: true, force: true, maxRetries: 5 });
  if (!existsSync(cache)) {
    console.warn("warm-up start wrote no code cache: machined will compile its bundle at every start");
  } else {
    console.log(`wrote machined.cjs.cache (${(readFileSync(cache).length / 1024).toFixed(0)} KiB) in ${Math.round(performance.now() - t0)} ms`);
  }
}
