/**
 * A CRI client (runtime.v1 RuntimeService and ImageService) over the CRI containerd's unix socket, with
 * @grpc/grpc-js and the messages generated from proto/cri/runtime/v1/api.proto. Each call has a deadline
 * (upstream's inspector dials with 10 s); failures are ApiErrors carrying the runtime's gRPC code and naming the
 * call, so an API handler can hand them to talosctl as they are.
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { ApiError, Code } from "../../machinery/errors.js";
import {
  ImageService,
  RuntimeService,
  type Container,
  type ContainerFilterSchema,
  type ContainerStats,
  type ContainerStatusResponse,
  type Image,
  type PodSandbox,
  type PodSandboxFilterSchema,
  type PodSandboxStatusResponse,
} from "../../machinery/api/gen/cri/runtime/v1/api_pb.js";

/** What the CRI inspector uses; tests may fake it. */
export interface CriClient {
  listPodSandbox(filter?: MessageInitShape<typeof PodSandboxFilterSchema>): Promise<PodSandbox[]>;
  podSandboxStatus(id: string, verbose: boolean): Promise<PodSandboxStatusResponse>;
  listContainers(filter?: MessageInitShape<typeof ContainerFilterSchema>): Promise<Container[]>;
  containerStatus(id: string, verbose: boolean): Promise<ContainerStatusResponse>;
  listContainerStats(): Promise<ContainerStats[]>;
  listImages(): Promise<Image[]>;
  /** Stops the container, killing it after `timeoutSeconds`. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  stopPodSandbox(id: string): Promise<void>;
  close(): void;
}

export type CriClientFactory = () => CriClient;

export interface CriClientOptions {
  /** Per-call deadline (default 10 s). */
  timeoutMs?: number;
}

/** A CRI client for the runtime listening on `socket` (an absolute path). Connects on the first call. */
export function criClient(socket: string, opts: CriClientOptions = {}): GrpcCriClient {
  return new GrpcCriClient(socket, opts.timeoutMs ?? 10_000);
}

export class GrpcCriClient implements CriClient {
  private readonly client: grpc.Client;

  constructor(
    readonly socket: string,
    private readonly timeoutMs: number,
  ) {
    this.client = new grpc.Client(`unix://${socket}`, grpc.credentials.createInsecure(), {
      // A busy node's lists are large; containerd's own limit is 16 MiB.
      "grpc.max_receive_message_length": 16 << 20,
    });
  }

  /** Any unary call of the two services (tests run pods with calls machined itself never makes). */
  unary<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, req: MessageInitShape<I>): Promise<MessageShape<O>> {
    const path = `/${method.parent.typeName}/${method.name}`;
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest<MessageShape<I>, MessageShape<O>>(
        path,
        (m) => Buffer.from(toBinary(method.input, m)),
        (b) => fromBinary(method.output, b),
        create(method.input, req),
        new grpc.Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => (err || !res ? reject(criError(method.name, this.socket, err)) : resolve(res)),
      );
    });
  }

  async listPodSandbox(filter?: MessageInitShape<typeof PodSandboxFilterSchema>): Promise<PodSandbox[]> {
    return (await this.unary(RuntimeService.method.listPodSandbox, { filter })).items;
  }

  podSandboxStatus(id: string, verbose: boolean): Promise<PodSandboxStatusResponse> {
    return this.unary(RuntimeService.method.podSandboxStatus, { podSandboxId: id, verbose });
  }

  async listContainers(filter?: MessageInitShape<typeof ContainerFilterSchema>): Promise<Container[]> {
    return (await this.unary(RuntimeService.method.listContainers, { filter })).containers;
  }

  containerStatus(id: string, verbose: boolean): Promise<ContainerStatusResponse> {
    return this.unary(RuntimeService.method.containerStatus, { containerId: id, verbose });
  }

  async listContainerStats(): Promise<ContainerStats[]> {
    return (await this.unary(RuntimeService.method.listContainerStats, { filter: {} })).stats;
  }

  async listImages(): Promise<Image[]> {
    return (await this.unary(ImageService.method.listImages, { filter: {} })).images;
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    await this.unary(RuntimeService.method.stopContainer, { containerId: id, timeout: BigInt(timeoutSeconds) });
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.unary(RuntimeService.method.stopPodSandbox, { podSandboxId: id });
  }

  close(): void {
    this.client.close();
  }
}

function criError(call: string, socket: string, err: grpc.ServiceError | null): ApiError {
  if (!err) return new ApiError(Code.Internal, `${call}: the runtime sent no answer`);
  const code = Object.values(Code).includes(err.code as number) ? (err.code as number as Code) : Code.Unknown;
  const why = code === Code.Unavailable ? `CRI runtime at ${socket} is not reachable: ${err.details}` : err.details || err.message;
  return new ApiError(code, `${call}: ${why}`);
}
