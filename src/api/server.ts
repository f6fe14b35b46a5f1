/**
 * The API server: one grpc-js server whose connections come from our TLS listener, with every service
 * talosctl speaks registered. Handler groups live in handlers/, one file per concern. Every call passes
 * the transport's admission (roles, routing, limits) before its body is read; see transport/.
 */
import * as grpc from "@grpc/grpc-js";
import type { ListenAddress } from "../host/tls-listener.js";
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
import { admissionInterceptor, type Budget } from "./transport/admission.js";
import { DEFAULT_LIMITS, type TransportLimits } from "./transport/limits.js";
import type { ApiDeps } from "./deps.js";
import { WORKER_WAITING_REASON } from "./identity.js";
import { Forwarder } from "./forward/forwarder.js";
import { refersToThisNode } from "./forward/director.js";
import type { PoolOptions } from "./forward/pool.js";

export const MAX_MESSAGE = DEFAULT_LIMITS.maxMessageBytes;

export type ServiceHandlers = Map<DescService, Handlers>;

/** The longest a maintenance connection outlives maintenance mode while a call on the node is still in flight. */
const MAINTENANCE_DRAIN_MS = 30_000;

export class ApiServer {
  readonly grpc: grpc.Server;
  readonly conns = new ConnectionRegistry();
  /** Calls and request bytes in flight over all connections. */
  readonly budget: Budget = { calls: 0, inflightBytes: 0 };
  readonly limits: TransportLimits;
  private listener: ApiListener | undefined;
  private readonly makeContext = makeContextFactory();
  /** Calls for other nodes (`nodes`/`node` metadata), with this node's impersonator certificate. */
  readonly forwarder: Forwarder;
  private lastCapacityWarning = 0;

  constructor(
    private readonly deps: ApiDeps,
    limits: Partial<TransportLimits> = {},
    forwarding: Partial<PoolOptions> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    const l = this.limits;
    const isLocal = (n: string) => refersToThisNode(n, deps.localNames());
    this.forwarder = new Forwarder(deps.state, isLocal, forwarding);
    const admission = admissionInterceptor(
      {
        conns: this.conns,
        limits: l,
        waitingReason: WORKER_WAITING_REASON,
        routing: { isLocal, canForward: () => this.forwarder.canForward() },
      },
      this.budget,
    );
    this.grpc = new grpc.Server({
      "grpc.max_receive_message_length": l.maxMessageBytes,
      "grpc.max_send_message_length": l.maxMessageBytes,
      "grpc.max_concurrent_streams": l.maxConcurrentStreams,
      "grpc.max_connection_idle_ms": l.idleTimeoutMs,
      "grpc.keepalive_time_ms": l.keepaliveTimeMs,
      "grpc.keepalive_timeout_ms": l.keepaliveTimeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
      interceptors: [admission],
    });
  }

  /** Register every service talosctl may call; methods without a handler answer Unimplemented. */
  register(services: ServiceHandlers): void {
    for (const svc of [MachineService, ImageService, LifecycleService, StorageService, ClusterService, InspectService, TimeService, CosiState]) {
      const { definition, implementation } = bindService(svc, services.get(svc) ?? {}, this.makeContext, this.forwarder);
      this.grpc.addService(definition, implementation);
    }
  }

  async listen(host: string, port: number, mode: ListenerMode): Promise<ListenAddress> {
    const log = this.deps.log;
    this.listener = new ApiListener(
      this.grpc,
      this.conns,
      mode,
      {
        onRefused: (r) => {
          if (r.kind === "certificate") log.info({ peer: r.peer, reason: r.reason, alert: r.alert }, "client certificate refused");
          else if (r.kind === "limit") this.warnCapacity(r.reason);
          else log.debug({ peer: r.peer, reason: r.reason }, "connection closed before TLS completed");
        },
        onAcceptError: (err) => this.warnCapacity(`accept failed: ${err.message}`),
        onReaped: (peer) => log.debug({ peer }, "connection was gone without notice; socket released"),
      },
      this.limits,
    );
    return this.listener.listen(host, port);
  }

  /** Open TCP connections on the API port, in any state. */
  get openSockets(): number {
    return this.listener?.openSockets ?? 0;
  }

  setMode(mode: ListenerMode): void {
    if (!this.listener) throw new Error("listener not started");
    const leavingMaintenance = this.listener.currentMode === "maintenance" && mode.kind !== "maintenance";
    this.listener.setMode(mode);
    // Maintenance connections must not outlive maintenance mode: they carry no client identity. As upstream's
    // graceful stop of the maintenance service, the calls in flight (the apply that made the switch, whose reply
    // comes after its commit) finish first; then they are closed, at the latest after MAINTENANCE_DRAIN_MS.
    if (leavingMaintenance) this.closeMaintenanceWhenIdle(Date.now() + MAINTENANCE_DRAIN_MS);
  }

  private closeMaintenanceWhenIdle(deadline: number): void {
    const listener = this.listener;
    if (!listener) return;
    if (this.budget.calls <= 0 || Date.now() >= deadline) {
      // The grace lets the last reply's bytes through the HTTP/2 session into the socket (slow on a starved VM:
      // with 200 ms three parallel installs under TCG saw talosctl's "error reading from server: EOF"); the close
      // itself is an orderly end that flushes them.
      listener.closeMaintenance(1000);
      return;
    }
    setTimeout(() => this.closeMaintenanceWhenIdle(deadline), 50).unref();
  }

  rotate(identity: Parameters<ApiListener["rotateIdentity"]>[0]): void {
    this.listener?.rotateIdentity(identity);
  }

  async close(): Promise<void> {
    this.forwarder.close();
    await this.listener?.close();
    this.grpc.forceShutdown();
  }

  /** At most one warning per 10 s: a flood of refused connections must not become a flood of log lines. */
  private warnCapacity(reason: string): void {
    const now = Date.now();
    if (now - this.lastCapacityWarning < 10_000) return;
    this.lastCapacityWarning = now;
    this.deps.log.warn({ reason }, "API connection refused");
  }
}
