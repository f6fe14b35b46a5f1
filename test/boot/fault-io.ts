/**
 * Power-cut simulation for crash tests. Every mutating operation (block writes/syncs, ESP writes/renames/removes)
 * asks the shared PowerBudget first; when the budget is spent the operation either does not happen ("cut") or
 * happens halfway ("torn": half the bytes reach the medium), and PowerCut is thrown — nothing after it runs.
 */
import type { BlockIO } from "../../src/boot/blockio.js";
import type { EspEntry, EspFs } from "../../src/boot/esp.js";

export class PowerCut extends Error {
  constructor(readonly op: string) {
    super(`power cut during ${op}`);
  }
}

export class PowerBudget {
  ops: string[] = [];
  constructor(
    /** Operations allowed to complete; Infinity to count only. */
    public remaining = Infinity,
    public mode: "cut" | "torn" = "cut",
  ) {}

  /** Returns "ok" to proceed, "torn" to do half the work then throw; throws PowerCut for "cut". */
  take(op: string): "ok" | "torn" {
    if (this.remaining <= 0) {
      if (this.mode === "torn" && (op.startsWith("write") || op.startsWith("esp.write") || op.startsWith("esp.copyIn"))) return "torn";
      throw new PowerCut(op);
    }
    this.remaining--;
    this.ops.push(op);
    return "ok";
  }
}

export class FaultyBlockIO implements BlockIO {
  constructor(
    private readonly inner: BlockIO,
    private readonly power: PowerBudget,
    private readonly tag = "disk",
  ) {}
  get path() {
    return this.inner.path;
  }
  size() {
    return this.inner.size();
  }
  read(offset: number, length: number) {
    return this.inner.read(offset, length);
  }
  async write(offset: number, data: Uint8Array) {
    if (this.power.take(`write ${this.tag}@${offset}`) === "torn") {
      await this.inner.write(offset, data.subarray(0, Math.floor(data.length / 2)));
      throw new PowerCut(`torn write ${this.tag}@${offset}`);
    }
    await this.inner.write(offset, data);
  }
  async sync() {
    this.power.take(`sync ${this.tag}`);
    await this.inner.sync();
  }
  close() {
    return this.inner.close();
  }
}

export class FaultyEsp implements EspFs {
  constructor(
    private readonly inner: EspFs,
    private readonly power: PowerBudget,
  ) {}
  get where() {
    return this.inner.where;
  }
  list(dir: string): Promise<EspEntry[]> {
    return this.inner.list(dir);
  }
  read(path: string) {
    return this.inner.read(path);
  }
  readAll(dir: string) {
    return this.inner.readAll(dir);
  }
  exists(path: string) {
    return this.inner.exists(path);
  }
  async write(path: string, data: Uint8Array) {
    if (this.power.take(`esp.write ${path}`) === "torn") {
      await this.inner.write(path, data.subarray(0, Math.floor(data.length / 2)));
      throw new PowerCut(`torn esp.write ${path}`);
    }
    await this.inner.write(path, data);
  }
  async copyIn(hostPath: string, path: string) {
    if (this.power.take(`esp.copyIn ${path}`) === "torn") {
      await this.inner.write(path, Buffer.from("torn"));
      throw new PowerCut(`torn esp.copyIn ${path}`);
    }
    await this.inner.copyIn(hostPath, path);
  }
  async rename(from: string, to: string) {
    this.power.take(`esp.rename ${from} -> ${to}`);
    await this.inner.rename(from, to);
  }
  async remove(path: string) {
    this.power.take(`esp.remove ${path}`);
    await this.inner.remove(path);
  }
  async mkdir(path: string) {
    this.power.take(`esp.mkdir ${path}`);
    await this.inner.mkdir(path);
  }
}
