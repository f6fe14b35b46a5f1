/**
 * containerd's own Version call (containerd.services.version.v1.Version/Version) over its unix socket, in process:
 * the containerd health check. It was a `ctr version` spawn every 5 s per containerd (two on a Kubernetes node), a Go
 * binary started 24 times a minute, which is cheap on a host and costly in a guest under software emulation; one
 * long-lived gRPC channel answers the same question without a process. grpc-js reconnects by itself after a
 * containerd restart.
 *
 * The request is google.protobuf.Empty; the reply carries `string version = 1; string revision = 2;`, decoded here
 * directly (two length-delimited fields) rather than through generated code for one message.
 */
import * as grpc from "@grpc/grpc-js";

export interface ContainerdVersion {
  version: string;
  revision: string;
}

const PATH = "/containerd.services.version.v1.Version/Version";

/** The reply's string fields 1 and 2; unknown fields are skipped as protobuf requires. */
export function decodeVersionResponse(buf: Buffer): ContainerdVersion {
  const out: ContainerdVersion = { version: "", revision: "" };
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      if (i >= buf.length) throw new Error("truncated varint in containerd's version reply");
      const b = buf[i++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
      shift += 7;
      if (shift > 63) throw new Error("varint too long in containerd's version reply");
    }
  };
  while (i < buf.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 2) {
      const len = varint();
      if (i + len > buf.length) throw new Error("truncated field in containerd's version reply");
      const value = buf.subarray(i, i + len);
      i += len;
      if (field === 1) out.version = value.toString("utf8");
      else if (field === 2) out.revision = value.toString("utf8");
    } else if (wire === 0) varint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unexpected wire type ${wire} in containerd's version reply`);
  }
  return out;
}

export class ContainerdVersionClient {
  private client: grpc.Client | undefined;

  constructor(readonly socket: string) {}

  /** containerd's version; rejects with the gRPC error (or the abort reason) otherwise. */
  version(signal?: AbortSignal, timeoutMs = 3000): Promise<ContainerdVersion> {
    this.client ??= new grpc.Client(`unix://${this.socket}`, grpc.credentials.createInsecure());
    const client = this.client;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      const call = client.makeUnaryRequest(
        PATH,
        () => Buffer.alloc(0),
        (b: Buffer) => b,
        {},
        { deadline: Date.now() + timeoutMs },
        (err: grpc.ServiceError | null, reply?: Buffer) => {
          signal?.removeEventListener("abort", onAbort);
          if (err) return reject(new Error(`containerd at ${this.socket}: ${err.details || err.message}`));
          try {
            resolve(decodeVersionResponse(reply ?? Buffer.alloc(0)));
          } catch (e) {
            reject(e as Error);
          }
        },
      );
      const onAbort = () => call.cancel();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  close(): void {
    this.client?.close();
    this.client = undefined;
  }
}
