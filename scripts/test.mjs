// Runs a vitest suite and ends with one plain summary line ("N passed, N failed, N skipped") that CI
// tools read; the exit code is vitest's. `--results FILE` picks where the JSON report goes (default
// build/test-results.json); scripts/test-summary.mjs adds several reports up.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { summarize } from "./test-summary.mjs";

const args = process.argv.slice(2);
let out = "build/test-results.json";
const i = args.indexOf("--results");
if (i >= 0) [, out] = args.splice(i, 2);
mkdirSync("build", { recursive: true });
rmSync(out, { force: true });
const r = spawnSync(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${out}`, ...args],
  { stdio: "inherit" },
);
if (existsSync(out)) console.log(summarize([JSON.parse(readFileSync(out, "utf8"))]));
process.exit(r.status ?? 1);
