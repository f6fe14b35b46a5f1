/**
 * The API server: one grpc-js server whose connections come from our TLS listener, with every service
 * talosctl speaks registered. Handler groups live in handlers/, one file per concern.
 */
import * as grpc from "@grpc/grpc-js";
import type { AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import { MachineService } from "../machinery/api/gen/machine/machine_pb.js";
import { ImageService } from "../machinery/api/gen/machine/image_pb.js";
import { LifecycleService } from "../machinery/api/gen/machine/lifecycle_pb.js";
import { StorageService } from "../machinery/api/gen/storage/storage_pb.js";
import { ClusterService } from "../machinery/api/gen/cluster/cluster_pb.js";
import { InspectService } from "../machinery/api/gen/inspect/inspect_pb.js";
import { TimeService } from "../machinery/api/gen/time/time_pb.js";
import { State as CosiState } from "../machinery/api/gen/cosi/state_pb.js";
import { bindService, type Handlers } from "./transport/service.js";
import { makeContextFactory } from "./transport/context.js";
import { ConnectionRegistry } from "./transport/connections.js";
import { ApiListener, type ListenerMode } from "./transport/listener.js";
import type { ApiDeps } from "./deps.js";
import { WORKER_WAITING_REASON } from "./identity.js";

export const MAX_MESSAGE = 32 * 1024 * 1024;

export type ServiceHandlers = Map<DescService, Handlers>;

export class ApiServer {
  readonly grpc: grpc.Server;
  readonly conns = new ConnectionRegistry();
  private listener: ApiListener | undefined;

  private readonly makeContext;

  constructor(private readonly deps: ApiDeps) {
    this.grpc = new grpc.Server({
      "grpc.max_receive_message_length": MAX_MESSAGE,
      "grpc.max_send_message_length": MAX_MESSAGE,
      "grpc.keepalive_permit_without_calls": 1,
    });
    this.makeContext = makeContextFactory(this.conns, {
      isLocal: (n) => {
        const host = n.replace(/^\[|\]$/g, "").replace(/:\d+$/, "");
        return deps.localNames().includes(host) || deps.localNames().includes(n);
      },
    }, WORKER_WAITING_REASON);
  }

  /** Register every service talosctl may call; methods without a handler answer Unimplemented. */
  register(services: ServiceHandlers): void {
    for (const svc of [MachineService, ImageService, LifecycleService, StorageService, ClusterService, InspectService, TimeService, CosiState]) {
      const { definition, implementation } = bindService(svc, services.get(svc) ?? {}, this.makeContext);
      this.grpc.addService(definition, implementation);
    }
  }

  async listen(host: string, port: number, mode: ListenerMode): Promise<AddressInfo> {
    this.listener = new ApiListener(this.grpc, this.conns, mode, {
      onRejected: (reason, peer) => this.deps.log.warn({ peer, reason }, "TLS connection rejected"),
    });
    return this.listener.listen(host, port);
  }

  setMode(mode: ListenerMode): void {
    if (!this.listener) throw new Error("listener not started");
    const leavingMaintenance = this.listener.currentMode === "maintenance" && mode.kind !== "maintenance";
    this.listener.setMode(mode);
    // Maintenance connections must not outlive maintenance mode: they carry no client identity.
    if (leavingMaintenance) this.conns.closeMaintenance(2000);
  }

  rotate(identity: Parameters<ApiListener["rotateIdentity"]>[0]): void {
    this.listener?.rotateIdentity(identity);
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.grpc.forceShutdown();
  }
}
