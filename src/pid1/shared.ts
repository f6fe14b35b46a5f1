/** Pieces both entry wirings (local mode and PID 1) use. */
import * as os from "node:os";
import { Writable } from "node:stream";

/** The host's non-loopback addresses (zone ids stripped). */
export function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal)
    .map((a) => a.address.replace(/%.*$/, ""));
}

/** A stream that drops writes until its real destination is attached. */
export class LateSink extends Writable {
  private target: Writable | undefined;

  attach(target: Writable): void {
    this.target = target;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.target) return cb();
    this.target.write(chunk, cb);
  }
}
