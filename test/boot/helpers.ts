/** Shared test helpers: temp dirs, sparse images and "skip when a tool is missing" (printed, never silent). */
import { mkdtemp, rm, open, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { which } from "../../src/boot/tools.js";

export async function tempDir(prefix = "machined-boot-"): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function sparseFile(path: string, size: number): Promise<string> {
  const fh = await open(path, "w");
  await fh.close();
  await truncate(path, size);
  return path;
}

/** Returns the missing tools; prints why the suite is skipped so a skip is never silent. */
export async function missingTools(suite: string, tools: string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const t of tools) if (!(await which(t))) missing.push(t);
  if (missing.length > 0) console.log(`[skip] ${suite}: missing ${missing.join(", ")} (apt-get install gdisk dosfstools mtools xfsprogs e2fsprogs grub-common)`);
  return missing;
}
