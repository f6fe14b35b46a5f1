// Bundle the agent into one ESM file (dist/machined.mjs): fast start-up, and the image ships one file.
import { build } from "esbuild";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";

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
// The bill of materials the node reports (SBOMItems): the npm packages the bundle contains, plus koffi (kept
// external, shipped beside it). Read by src/host/sbom.ts from next to the bundle.
const own = JSON.parse(readFileSync("package.json", "utf8"));
const dirs = new Map([["koffi", "node_modules/koffi"]]);
for (const input of Object.keys(result.metafile.inputs)) {
  // The innermost node_modules/<pkg> of the path is the package the file belongs to (nested copies included).
  const m = [...input.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].pop();
  if (m) dirs.set(m[1], input.slice(0, m.index + m[0].length - 1));
}
const packages = [...dirs].sort(([a], [b]) => a.localeCompare(b)).map(([name, dir]) => {
  const p = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
  const license = typeof p.license === "string" ? p.license : undefined;
  return { name, version: p.version, ...(license ? { license } : {}), purls: [`pkg:npm/${name.replace(/^@/, "%40")}@${p.version}`] };
});
writeFileSync("dist/sbom.json", `${JSON.stringify({ machined: { name: own.name, version: own.version, license: own.license }, packages }, null, 2)}\n`);
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`built dist/machined.mjs in ${Math.round(performance.now() - started)} ms (${(bytes / 1024).toFixed(0)} KiB with map)`);
