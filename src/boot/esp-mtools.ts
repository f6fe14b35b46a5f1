/**
 * EspFs over mtools ("img@@offset"), so install and tests can edit a FAT filesystem inside a disk image
 * without loop devices or root. Each call is one short-lived mtools process.
 */
import { join } from "node:path";
import { hostFiles as files } from "../host/files/index.js";
import { joinEsp, type EspEntry, type EspFs } from "./esp.js";
import { runTool, ToolError } from "./tools.js";

function isNotFound(err: unknown): boolean {
  return err instanceof ToolError && /not found|No such file/i.test(err.stderr);
}

export class MtoolsEsp implements EspFs {
  readonly where: string;
  private readonly image: string;

  /**
   * mtools never fsyncs. Our crash-safety argument needs each write durable before the rename that publishes it,
   * and each rename durable before the next step, so every mutation is followed by an fsync of the image/device
   * (`durable: false` only for throwaway images).
   */
  constructor(
    private readonly imagePath: string,
    offsetBytes = 0,
    private readonly opts: { durable?: boolean } = {},
  ) {
    this.image = offsetBytes > 0 ? `${imagePath}@@${offsetBytes}` : imagePath;
    this.where = `ESP in ${imagePath} at offset ${offsetBytes}`;
  }

  private async flush(): Promise<void> {
    if (this.opts.durable === false) return;
    const fh = await files.open(this.imagePath, "r+");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  private p(path: string): string {
    return `::${joinEsp(path)}`;
  }

  async list(dir: string): Promise<EspEntry[]> {
    try {
      const { stdout } = await runTool("mdir", ["-i", this.image, "-b", this.p(dir) + "/"]);
      const prefix = this.p(dir).replace(/\/$/, "") + "/";
      return stdout
        .toString("utf8")
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => {
          const rel = l.startsWith(prefix) ? l.slice(prefix.length) : l.slice(l.lastIndexOf("/", l.length - 2) + 1);
          const dirEntry = rel.endsWith("/");
          return { name: dirEntry ? rel.slice(0, -1) : rel, dir: dirEntry };
        })
        .filter((e) => e.name !== "." && e.name !== ".." && e.name.length > 0);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  async read(path: string): Promise<Buffer | undefined> {
    try {
      return (await runTool("mcopy", ["-n", "-i", this.image, this.p(path), "-"])).stdout;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async readAll(dir: string): Promise<{ name: string; data: Buffer }[]> {
    // one mcopy of "dir/*" into a private folder instead of one process per file
    const tmp = await files.tempDir("machined-esp-");
    try {
      try {
        await runTool("mcopy", ["-n", "-i", this.image, `${this.p(dir)}/*`, `${tmp}/`]);
      } catch (err) {
        if (isNotFound(err)) return [];
        throw err;
      }
      const out: { name: string; data: Buffer }[] = [];
      for (const e of await files.entries(tmp)) {
        if (e.isFile()) out.push({ name: e.name, data: await files.readFile(join(tmp, e.name)) });
      }
      return out;
    } finally {
      await files.rm(tmp, { recursive: true, force: true });
    }
  }

  async write(path: string, data: Uint8Array): Promise<void> {
    // mcopy cannot read stdin reliably for binary data; stage through a private temp file.
    const dir = await files.tempDir("machined-esp-");
    try {
      const tmp = join(dir, "data");
      await files.writeFile(tmp, data);
      await this.copyIn(tmp, path);
    } finally {
      await files.rm(dir, { recursive: true, force: true });
    }
  }

  async copyIn(hostPath: string, path: string): Promise<void> {
    await runTool("mcopy", ["-n", "-o", "-D", "o", "-i", this.image, hostPath, this.p(path)]);
    await this.flush();
  }

  async rename(from: string, to: string): Promise<void> {
    await runTool("mmove", ["-D", "o", "-i", this.image, this.p(from), this.p(to)]);
    await this.flush();
  }

  async remove(path: string): Promise<void> {
    try {
      await runTool("mdel", ["-i", this.image, this.p(path)]);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return;
    }
    await this.flush();
  }

  async mkdir(path: string): Promise<void> {
    const parts = joinEsp(path).split("/").filter(Boolean);
    if (parts.length === 0 || (await this.exists(path))) return; // the common case: one listing, no mmd
    const chain = parts.map((_, i) => this.p(`/${parts.slice(0, i + 1).join("/")}`));
    try {
      // -D s: skip components that exist; mmd then exits non-zero, so success is judged by the result below
      await runTool("mmd", ["-D", "s", "-i", this.image, ...chain]);
    } catch (err) {
      try {
        await runTool("mdir", ["-b", "-i", this.image, `${chain[chain.length - 1]}/`]);
      } catch {
        throw err;
      }
    }
    await this.flush();
  }

  async exists(path: string): Promise<boolean> {
    const norm = joinEsp(path);
    if (norm === "/") return true;
    const slash = norm.lastIndexOf("/");
    const parent = norm.slice(0, slash) || "/";
    const name = norm.slice(slash + 1).toLowerCase();
    return (await this.list(parent)).some((e) => e.name.toLowerCase() === name);
  }
}
