/**
 * Kernel parameters (`runtime` namespace): KernelParamDefaultSpecs (what machined sets on every node, upstream's
 * defaults), KernelParamSpecs (machine.sysctls from the config) and KernelParamStatuses (what the kernel has).
 * Ids are the /proc/sys keys in dotted form with upstream's "proc.sys." prefix, e.g. `proc.sys.net.ipv4.ip_forward`.
 */
import { KernelParamSpecSpecSchema, KernelParamStatusSpecSchema } from "../../api/gen/resource/definitions/runtime/runtime_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";

export interface KernelParamSpec {
  value: string;
  ignoreErrors: boolean;
}

export interface KernelParamStatusSpec {
  current: string;
  default: string;
  unsupported: boolean;
}

export const KernelParamDefaultSpecType: ResourceType<KernelParamSpec> = {
  type: "KernelParamDefaultSpecs.runtime.talos.dev",
  defaultNamespace: "runtime",
  toProto: (s) => specToProto(KernelParamSpecSpecSchema, s),
};

export const KernelParamSpecType: ResourceType<KernelParamSpec> = {
  type: "KernelParamSpecs.runtime.talos.dev",
  defaultNamespace: "runtime",
  toProto: (s) => specToProto(KernelParamSpecSpecSchema, s),
};

export const KernelParamStatusType: ResourceType<KernelParamStatusSpec> = {
  type: "KernelParamStatuses.runtime.talos.dev",
  defaultNamespace: "runtime",
  printColumns: [
    { name: "Current", jsonPath: "{.current}" },
    { name: "Default", jsonPath: "{.default}" },
    { name: "Unsupported", jsonPath: "{.unsupported}" },
  ],
  toProto: (s) => specToProto(KernelParamStatusSpecSchema, s),
};

export const KERNEL_TYPES: ResourceType[] = [KernelParamDefaultSpecType, KernelParamSpecType, KernelParamStatusType] as ResourceType[];

/** `net.ipv4.ip_forward` or `net/ipv4/ip_forward` → the resource id `proc.sys.net.ipv4.ip_forward`. */
export function kernelParamId(key: string): string {
  const k = key.replace(/\//g, ".").replace(/^proc\.sys\./, "");
  return `proc.sys.${k}`;
}

/** The /proc/sys path of a resource id. */
export function kernelParamPath(id: string): string {
  return `/proc/sys/${id.replace(/^proc\.sys\./, "").replace(/\./g, "/")}`;
}

/**
 * The settings the kubelet checks with protectKernelDefaults (and would write itself otherwise); machined sets
 * them before it starts the kubelet.
 */
export const KUBELET_KERNEL_DEFAULTS: Record<string, string> = {
  "vm.overcommit_memory": "1",
  "vm.panic_on_oom": "0",
  "kernel.panic": "10",
  "kernel.panic_on_oops": "1",
  "kernel.keys.root_maxkeys": "1000000",
  "kernel.keys.root_maxbytes": "25000000",
};
