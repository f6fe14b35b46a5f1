/** EspFs over a mounted directory (the running node's ESP mount, or a plain folder in tests). */
import { dirname, join } from "node:path";
import { hostFiles, isNotFound, writeAll, type Files } from "../host/files/index.js";
import { joinEsp, type EspEntry, type EspFs } from "./esp.js";

export class DirEsp implements EspFs {
  readonly where: string;

  constructor(
    private readonly root: string,
    private readonly files: Files = hostFiles,
  ) {
    this.where = `ESP mounted at ${root}`;
  }

  private p(path: string): string {
    return join(this.root, joinEsp(path));
  }

  async list(dir: string): Promise<EspEntry[]> {
    try {
      const ents = await this.files.entries(this.p(dir));
      return ents.map((e) => ({ name: e.name, dir: e.isDirectory() }));
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  async read(path: string): Promise<Buffer | undefined> {
    try {
      return await this.files.readFile(this.p(path));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async readAll(dir: string): Promise<{ name: string; data: Buffer }[]> {
    const out: { name: string; data: Buffer }[] = [];
    for (const e of await this.list(dir)) {
      if (e.dir) continue;
      const data = await this.read(`${dir}/${e.name}`);
      if (data) out.push({ name: e.name, data });
    }
    return out;
  }

  async write(path: string, data: Uint8Array): Promise<void> {
    const fh = await this.files.open(this.p(path), "w");
    try {
      await writeAll(fh, data);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  async copyIn(hostPath: string, path: string): Promise<void> {
    await this.files.copyFile(hostPath, this.p(path));
  }

  async rename(from: string, to: string): Promise<void> {
    await this.files.rename(this.p(from), this.p(to));
    // make the rename durable: it is the commit point for boot entries
    const dh = await this.files.open(dirname(this.p(to)), "r");
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }

  async remove(path: string): Promise<void> {
    await this.files.rm(this.p(path), { force: true });
  }

  async mkdir(path: string): Promise<void> {
    await this.files.mkdir(this.p(path), { recursive: true });
  }

  async exists(path: string): Promise<boolean> {
    return this.files.exists(this.p(path));
  }
}
