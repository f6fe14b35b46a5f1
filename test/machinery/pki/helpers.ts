/** Shared test helpers: fixture access and an openssl runner (tests using it skip when openssl is absent). */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export { FIXTURES, fixture, hasFixtures } from "../../helpers/fixtures.js";

export const hasOpenssl = spawnSync("openssl", ["version"]).status === 0;
if (!hasOpenssl) console.warn("openssl not found in PATH: openssl cross-checks are skipped");

/** Runs openssl with the given PEM files written to a temp dir; `{name}` in args is replaced by the file path. */
export function openssl(args: string[], files: Record<string, string> = {}): { ok: boolean; out: string } {
  const dir = mkdtempSync(join(tmpdir(), "pki-test-"));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const resolved = args.map((a) => a.replace(/\{(\w[\w.-]*)\}/g, (_, n: string) => join(dir, n)));
    const r = spawnSync("openssl", resolved, { encoding: "utf8" });
    return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function opensslText(certPem: string): string {
  const r = openssl(["x509", "-noout", "-text", "-in", "{c.pem}"], { "c.pem": certPem });
  if (!r.ok) throw new Error(r.out);
  return r.out;
}

export function sh(cmd: string): string {
  return execFileSync("sh", ["-c", cmd], { encoding: "utf8" });
}
