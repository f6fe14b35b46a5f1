/**
 * Where the machine config lives on disk: `<stateDir>/config.yaml` (active) and
 * `<stateDir>/config.staged.yaml` (applied at the next reboot). Writes are atomic, so a crash in the
 * middle of an apply leaves the old or the new document, never neither.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { cleanupTemporaries, writeFileAtomic } from "../host/atomic-file.js";

export class ConfigStore {
  readonly activePath: string;
  readonly stagedPath: string;

  constructor(readonly dir: string) {
    this.activePath = path.join(dir, "config.yaml");
    this.stagedPath = path.join(dir, "config.staged.yaml");
  }

  async init(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await cleanupTemporaries(this.activePath);
    await cleanupTemporaries(this.stagedPath);
  }

  readActive(): Promise<Uint8Array | undefined> {
    return readIfExists(this.activePath);
  }

  readStaged(): Promise<Uint8Array | undefined> {
    return readIfExists(this.stagedPath);
  }

  writeActive(data: Uint8Array): Promise<void> {
    return writeFileAtomic(this.activePath, data);
  }

  writeStaged(data: Uint8Array): Promise<void> {
    return writeFileAtomic(this.stagedPath, data);
  }

  async clearStaged(): Promise<void> {
    await fs.rm(this.stagedPath, { force: true });
  }

  /** Reset: forget every stored config (back to maintenance mode). */
  async wipe(): Promise<void> {
    await fs.rm(this.activePath, { force: true });
    await fs.rm(this.stagedPath, { force: true });
  }
}

async function readIfExists(p: string): Promise<Uint8Array | undefined> {
  try {
    return new Uint8Array(await fs.readFile(p));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
