// Adds up vitest JSON reports into the plain "N passed, N failed, N skipped" line.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function summarize(reports) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const j of reports) {
    passed += j.numPassedTests ?? 0;
    failed += j.numFailedTests ?? 0;
    skipped += (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  }
  return `${passed} passed, ${failed} failed, ${skipped} skipped`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = process.argv.slice(2).filter((f) => existsSync(f));
  console.log(summarize(files.map((f) => JSON.parse(readFileSync(f, "utf8")))));
}
