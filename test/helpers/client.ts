/**
 * A typed gRPC client for tests, built from the same protobuf-es descriptors as the server: real
 * grpc-js over real TLS, so tests exercise the wire exactly as talosctl does.
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";

export interface CallOptions {
  metadata?: Record<string, string | string[]>;
  deadlineMs?: number;
}

export class TestClient {
  readonly raw: grpc.Client;

  constructor(address: string, creds: grpc.ChannelCredentials, options: grpc.ChannelOptions = {}) {
    this.raw = new grpc.Client(address, creds, { "grpc.max_receive_message_length": 64 * 1024 * 1024, ...options });
  }

  private md(opts?: CallOptions): grpc.Metadata {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(opts?.metadata ?? {})) for (const x of [v].flat()) md.add(k, x);
    return md;
  }

  private callOpts(opts?: CallOptions): grpc.CallOptions {
    return opts?.deadlineMs ? { deadline: Date.now() + opts.deadlineMs } : {};
  }

  unary<S extends DescService, I extends DescMessage, O extends DescMessage>(
    service: S,
    method: string,
    input: I,
    output: O,
    req: MessageInitShape<I>,
    opts?: CallOptions,
  ): Promise<MessageShape<O>> {
    const path = `/${service.typeName}/${method}`;
    return new Promise((resolve, reject) => {
      this.raw.makeUnaryRequest(
        path,
        (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
        (b: Buffer) => fromBinary(output, b),
        create(input, req),
        this.md(opts),
        this.callOpts(opts),
        (err, res) => (err ? reject(err) : resolve(res as MessageShape<O>)),
      );
    });
  }

  /** Collect a server stream; `limit` stops after N messages (the call is then cancelled). */
  stream<I extends DescMessage, O extends DescMessage>(
    service: DescService,
    method: string,
    input: I,
    output: O,
    req: MessageInitShape<I>,
    opts?: CallOptions & { limit?: number; onMessage?: (m: MessageShape<O>) => void },
  ): Promise<MessageShape<O>[]> {
    const path = `/${service.typeName}/${method}`;
    const call = this.raw.makeServerStreamRequest(
      path,
      (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
      (b: Buffer) => fromBinary(output, b),
      create(input, req),
      this.md(opts),
      this.callOpts(opts),
    );
    const out: MessageShape<O>[] = [];
    return new Promise((resolve, reject) => {
      call.on("data", (m: MessageShape<O>) => {
        out.push(m);
        opts?.onMessage?.(m);
        if (opts?.limit !== undefined && out.length >= opts.limit) {
          call.cancel();
          resolve(out);
        }
      });
      call.on("error", (err: grpc.ServiceError) => (err.code === grpc.status.CANCELLED ? resolve(out) : reject(err)));
      call.on("end", () => resolve(out));
    });
  }

  close(): void {
    this.raw.close();
  }
}

export const insecureTls = () => grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined });

export const mtls = (caPem: string, certPem: string, keyPem: string) =>
  grpc.credentials.createSsl(Buffer.from(caPem), Buffer.from(keyPem), Buffer.from(certPem), { checkServerIdentity: () => undefined });
