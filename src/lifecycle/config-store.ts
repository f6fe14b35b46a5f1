/**
 * Where the machine config lives on disk: `<stateDir>/config.yaml` (active) and
 * `<stateDir>/config.staged.yaml` (applied at the next reboot). Writes are atomic, so a crash in the
 * middle of an apply leaves the old or the new document, never neither.
 */
import * as path from "node:path";
import { cleanupTemporaries, hostFiles, isNotFound, writeFileAtomic, type Files } from "../host/files/index.js";

export class ConfigStore {
  readonly activePath: string;
  readonly stagedPath: string;

  constructor(
    readonly dir: string,
    private readonly files: Files = hostFiles,
  ) {
    this.activePath = path.join(dir, "config.yaml");
    this.stagedPath = path.join(dir, "config.staged.yaml");
  }

  async init(): Promise<void> {
    await this.files.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await cleanupTemporaries(this.files, this.activePath);
    await cleanupTemporaries(this.files, this.stagedPath);
  }

  readActive(): Promise<Uint8Array | undefined> {
    return this.readIfExists(this.activePath);
  }

  readStaged(): Promise<Uint8Array | undefined> {
    return this.readIfExists(this.stagedPath);
  }

  writeActive(data: Uint8Array): Promise<void> {
    return writeFileAtomic(this.files, this.activePath, data);
  }

  writeStaged(data: Uint8Array): Promise<void> {
    return writeFileAtomic(this.files, this.stagedPath, data);
  }

  async clearStaged(): Promise<void> {
    await this.files.rm(this.stagedPath, { force: true });
  }

  /** Reset: forget every stored config (back to maintenance mode). */
  async wipe(): Promise<void> {
    await this.files.rm(this.activePath, { force: true });
    await this.files.rm(this.stagedPath, { force: true });
  }

  private async readIfExists(p: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await this.files.readFile(p));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
