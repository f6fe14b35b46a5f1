// Runs the vitest suite and ends with one plain summary line ("N passed, N failed, N skipped") that CI
// tools read; the exit code is vitest's.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";

const out = "build/test-results.json";
mkdirSync("build", { recursive: true });
rmSync(out, { force: true });
const r = spawnSync(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${out}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
if (existsSync(out)) {
  const j = JSON.parse(readFileSync(out, "utf8"));
  const skipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  console.log(`${j.numPassedTests} passed, ${j.numFailedTests} failed, ${skipped} skipped`);
}
process.exit(r.status ?? 1);
