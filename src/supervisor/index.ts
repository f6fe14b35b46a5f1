/** The supervisor's public surface for the lifecycle and API layers. */
export { Supervisor, type SupervisorOptions, type ServiceCondition } from "./supervisor.js";
export * from "./types.js";
export { LogManager, ServiceLog, followFile, tailLines, type LogReadOptions, type LogSettings } from "./logs.js";
export { toServiceInfo, toServiceHealth, toServiceStateEvent } from "./proto.js";
export { condition, pollCondition, fileExists, allOf } from "./conditions.js";
export { ProcessRunner, type ProcessRunnerOptions } from "./runners/process.js";
export { ContainerdRunner, type ContainerdRunnerOptions, type Mount } from "./runners/containerd.js";
export { GoroutineRunner, type ServiceMain } from "./runners/goroutine.js";
export { Ctr, ensureImage, type ContainerSummary, type ImageSource } from "./ctr.js";
export { ContainerdService, containerdConfig, containerdPaths, CRI_CONTAINERD_PATHS, SYSTEM_CONTAINERD_PATHS, type ContainerdPaths, type ContainerdServiceOptions } from "./services/containerd.js";
export { EtcdService, WAITING_TO_JOIN, type EtcdPki, type EtcdServiceOptions, type BootstrapRequest, type MachineType } from "./services/etcd.js";
export { KubeletService, type KubeletServiceOptions, type KubeletRun } from "./services/kubelet.js";
export { MachinedService } from "./services/machined.js";
export { EtcdClient, type EtcdMemberInfo, type EtcdMemberStatusInfo, type EtcdAlarmInfo } from "./etcd/client.js";
export { formatMemberId } from "./etcd/ops.js";
