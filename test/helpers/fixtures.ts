/**
 * Where the upstream Talos test documents live (configs, secrets, patch cases). They are upstream's test data,
 * kept outside this repository in `../shared/fixtures/talos` (or `$TALOS_FIXTURES`); `scripts/get-fixtures.sh`
 * copies them there from a Talos source tree. Tests that need them skip themselves, saying so in one line, when
 * they are absent; `.ci/run` refuses to run without them.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const FIXTURES = process.env.TALOS_FIXTURES ?? fileURLToPath(new URL("../../../shared/fixtures/talos", import.meta.url));

export const hasFixtures = existsSync(join(FIXTURES, "configs")) && existsSync(join(FIXTURES, "patches"));

export const FIXTURES_MISSING = `upstream Talos test fixtures not found at ${FIXTURES}; tests that read them are skipped. Get them with: scripts/get-fixtures.sh <talos source tree> (or set TALOS_FIXTURES)`;

if (!hasFixtures) console.warn(FIXTURES_MISSING);

export function fixture(...parts: string[]): string {
  if (!hasFixtures) throw new Error(FIXTURES_MISSING);
  return readFileSync(join(FIXTURES, ...parts), "utf8");
}
