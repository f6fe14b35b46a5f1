// Bundle the agent into one ESM file (dist/machined.mjs): fast start-up, and the image ships one file.
import { build } from "esbuild";
import { chmodSync } from "node:fs";

const started = performance.now();
const result = await build({
  entryPoints: ["src/main.ts"],
  outfile: "dist/machined.mjs",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: "linked",
  metafile: true,
  // CJS dependencies inside an ESM bundle need a require().
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  external: ["koffi"],
  logLevel: "warning",
});
chmodSync("dist/machined.mjs", 0o755);
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`built dist/machined.mjs in ${Math.round(performance.now() - started)} ms (${(bytes / 1024).toFixed(0)} KiB with map)`);
