/**
 * The software bill of materials of this agent: machined itself, the Node.js runtime it runs on, and the npm
 * packages inside it. `npm run build` writes the packages the bundle really contains to `dist/sbom.json` (from
 * esbuild's metafile, scripts/build.mjs); run from source, the production entries of package-lock.json stand in.
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface SbomEntry {
  name: string;
  version: string;
  license?: string;
  purls?: string[];
}

export const SBOM_FILE = "sbom.json";

async function readJson<T>(path: string): Promise<T | undefined> {
  return readFile(path, "utf8").then(
    (t) => JSON.parse(t) as T,
    () => undefined,
  );
}

/** Production packages of a package-lock.json (lockfile v2/v3 `packages` map), sorted by name. */
export function lockfilePackages(lock: { packages?: Record<string, { version?: string; license?: string; dev?: boolean }> }): SbomEntry[] {
  const out: SbomEntry[] = [];
  for (const [path, p] of Object.entries(lock.packages ?? {})) {
    if (!path.startsWith("node_modules/") || p.dev || !p.version) continue;
    const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    out.push({ name, version: p.version, ...(p.license ? { license: p.license } : {}), purls: [`pkg:npm/${name.replace(/^@/, "%40")}@${p.version}`] });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** What this agent consists of; `here` is the folder of the running code (the bundle's, when bundled). */
export async function readSbom(here = dirname(fileURLToPath(import.meta.url))): Promise<SbomEntry[]> {
  const own = await readJson<{ machined: SbomEntry; packages: SbomEntry[] }>(join(here, SBOM_FILE));
  let packages = own?.packages;
  let machined = own?.machined;
  if (!packages) {
    // From source: the repository root is the nearest folder up with our package.json.
    for (let dir = here; ; dir = dirname(dir)) {
      const pkg = await readJson<{ name?: string; version?: string; license?: string }>(join(dir, "package.json"));
      if (pkg?.name === "machined") {
        machined = { name: "machined", version: pkg.version ?? "", license: pkg.license };
        packages = lockfilePackages((await readJson(join(dir, "package-lock.json"))) ?? {});
        break;
      }
      if (dirname(dir) === dir) break;
    }
  }
  const node: SbomEntry = { name: "node", version: process.version.replace(/^v/, ""), license: "MIT", purls: [`pkg:generic/node@${process.version.replace(/^v/, "")}`] };
  return [...(machined ? [machined] : []), node, ...(packages ?? [])];
}
